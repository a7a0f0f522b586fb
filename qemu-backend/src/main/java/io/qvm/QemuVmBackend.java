package io.qvm;

import io.qvm.admin.BackendAdmin;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.boot.ColdBoot;
import io.qvm.internal.boot.RestoreSlots;
import io.qvm.internal.boot.Deadlines;
import io.qvm.internal.boot.StartPlan;
import io.qvm.internal.boot.StartPlanner;
import io.qvm.internal.boot.TemplateStarts;
import io.qvm.internal.boot.VmStart;
import io.qvm.internal.image.ImageResolver;
import io.qvm.internal.image.ImageSignature;
import io.qvm.internal.probe.AcceleratorChoice;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.process.CgroupTree;
import io.qvm.internal.process.QemuUser;
import io.qvm.internal.process.ReapReport;
import io.qvm.internal.process.StaleSandboxReaper;
import io.qvm.internal.process.StateDirectory;
import io.qvm.internal.sandbox.QemuSandbox;
import io.qvm.internal.template.Template;
import io.qvm.internal.template.TemplateKey;
import io.qvm.internal.template.TemplateStore;
import io.qvm.internal.image.ClassArchives;
import io.qvm.protocol.Limits;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The {@link SandboxBackend} that runs each sandbox as a QEMU virtual machine with no network
 * device, booting qvm's guest image (a tiny kernel + initramfs whose init runs the renderer
 * worker under gVisor), on the best accelerator this host has.
 *
 * <pre>{@code
 * try (QemuVmBackend backend = QemuVmBackend.create();
 *      Sandbox sandbox = backend.start(SandboxConfig.defaults())) {
 *     byte[] png = sandbox.render(RenderRequest.svg(svgBytes).withSize(800, 600)).png();
 * }
 * }</pre>
 *
 * <p>What {@link #start} does, each step with the config's boot deadline and a typed error:
 * probe the host once (QEMU binary and version; accelerator verdict, cached per host and QEMU
 * version), find and verify the image (the builder's {@link Builder#imageDir},
 * else {@code $QVM_IMAGE_DIR}, else the user cache, else the image artifact of this backend's
 * version in the local Maven repository), choose the transport, build the argv (a pure function),
 * record the sandbox in the state directory, launch QEMU, connect QMP, connect the worker
 * transport and complete HELLO/READY. A failure at any step stops QEMU and removes every file the
 * step created; the exception carries the guest console's and QEMU's stderr tails.
 *
 * <p>QEMU never runs as root: when this process is root, QEMU drops to {@code QVM_QEMU_USER}
 * ({@code qvm}) after its setup, and nothing starts if that user is missing.
 * It gets a minimal environment, and, where the host has a writable cgroup v2, a cgroup of its
 * own with the sandbox's memory and task limits. What the backend decided (host, accelerator,
 * image, templates) is told by {@link #admin()}.
 *
 * <p>Creating a backend reaps sandboxes whose owner process is gone (a JVM killed with SIGKILL
 * cannot stop its QEMUs; the next backend does).
 */
public final class QemuVmBackend implements SandboxBackend {

    private static final System.Logger LOG = System.getLogger(QemuVmBackend.class.getName());

    private final StateDirectory states;
    private final Path runtimeRoot;
    private final Consumer<String> progress;
    private final TemplateStore templates;
    private final ClassArchives classArchives;
    private final io.qvm.internal.sandbox.QemuSandbox.PauseCheck pauseCheck;
    private final boolean useTemplates;
    private final Set<QemuSandbox> running = ConcurrentHashMap.newKeySet();
    private final ReapReport startupReap;
    private final QemuUser qemuUser;
    private final CgroupTree cgroupTree;
    private final StartPlanner planner;
    private final TemplateStarts templateStarts;
    private final ColdBoot coldBoot;
    /** The cgroup tree once prepared, or empty when the host has none for QEMU (null: not tried yet). */
    private volatile Optional<CgroupTree> cgroups;
    /** Who QEMU drops to, once {@link #qemuUser} said so (a refusal is not kept: the fix takes effect at once). */
    private volatile Optional<QemuUser.Account> runAs;
    private volatile boolean closed;

    private QemuVmBackend(Builder b) {
        QvmEnvironment env = b.env != null ? QvmEnvironment.of(b.env) : QvmEnvironment.system();
        if (b.imageRoot != null && b.imageResolver != null) {
            throw new IllegalStateException("both imageDir and imageResolver were set: give the directory to the "
                    + "resolver's builder instead");
        }
        this.states = StateDirectory.at(b.stateRoot != null ? b.stateRoot : env.stateRoot());
        this.runtimeRoot = b.runtimeRoot != null ? b.runtimeRoot : env.runtimeRoot();
        this.progress = b.progress;
        this.templates = TemplateStore.at(b.templateRoot != null ? b.templateRoot : env.templateRoot())
                .withQuota(b.maxTemplates, b.maxTemplateBytes);
        this.useTemplates = b.useTemplates != null ? b.useTemplates : env.templatesEnabled();
        boolean archives = b.useClassArchives != null ? b.useClassArchives : env.classArchivesEnabled();
        this.classArchives = archives ? ClassArchives.at(b.classArchiveRoot != null ? b.classArchiveRoot
                : env.classArchiveRoot(), b.classArchiveMaxBytes) : ClassArchives.disabled("class archives are off (" + QvmEnvironment.CLASS_ARCHIVES
                + "=off or the backend's classArchives(false))");
        this.qemuUser = b.qemuUser != null ? b.qemuUser : QemuUser.system(env);
        this.cgroupTree = b.cgroupTree != null ? b.cgroupTree : CgroupTree.system();
        this.pauseCheck = b.pauseCheck;
        this.planner = new StartPlanner(b.hostProbe != null ? b.hostProbe : HostProbe.system(),
                b.imageResolver != null ? b.imageResolver : ImageResolver.system(b.imageRoot),
                ImageSignature.configured(b.imageKey, env), b.guestArch, b.useProbeCache, this::runAs, progress);
        this.templateStarts = new TemplateStarts(templates, this::context, progress, running::add,
                b.restoreSlots > 0 ? new RestoreSlots(b.restoreSlots) : RestoreSlots.forHost(),
                b.templateWarmUp != null ? b.templateWarmUp : env.templateWarmUpEnabled());
        this.coldBoot = new ColdBoot(this::context, progress, running::add);
        this.startupReap = b.reapOnStart ? reap() : null;
    }

    /** Set to {@code off} to make every sandbox cold-boot (the builder's {@code templates(false)}). */
    public static final String ENV_TEMPLATES = QvmEnvironment.TEMPLATES;

    /**
     * A backend with every default (the {@code QVM_*} environment; the image from
     * {@code $QVM_IMAGE_DIR}, else the user cache, else the local Maven repository).
     */
    public static QemuVmBackend create() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * How many times a boot is tried when the worker dies before READY or the guest stalls; all
     * attempts share the one boot deadline ({@link ColdBoot#ATTEMPTS}).
     */
    static final int BOOT_ATTEMPTS = ColdBoot.ATTEMPTS;

    /**
     * Starts a sandbox: plans it once (host, QEMU, image, accelerator, machine, limits), restores
     * it from a template where templates serve this config here, and cold-boots it otherwise or
     * when every clone failed.
     */
    @Override
    public Sandbox start(SandboxConfig config) {
        Objects.requireNonNull(config, "config");
        if (closed) {
            throw new IllegalStateException("this backend is closed");
        }
        runAs(); // as root with no user for QEMU, nothing starts (not even a template build)
        long t0 = System.nanoTime();
        // no QEMU, no image, no accelerator: thrown as they are (a cold boot would fail the same way)
        StartPlan plan = planner.plan(config);
        long deadline = deadline(t0, plan, config);
        List<String> earlier = new ArrayList<>();
        if (useTemplates) {
            Optional<QemuSandbox> clone;
            try {
                clone = templateStarts.start(plan, deadline, earlier);
            } catch (TemplateStarts.RestoresFailed failed) {
                return coldBootInstead(plan, deadline, earlier, failed);
            }
            if (clone.isPresent()) {
                return clone.get();
            }
        }
        return coldBoot.boot(plan, deadline, earlier);
    }

    /**
     * The start's deadline: the boot timeout from {@code t0}, plus the time the init may spend
     * making the worker's class archive when this start's boot would make it (adr/0018), so that
     * the one start per image that makes it, and what follows its boot (a template's save, its
     * clone's restore), fit as any other start's do.
     */
    private long deadline(long t0, StartPlan plan, SandboxConfig config) {
        long d = t0 + config.bootTimeout().toNanos();
        if (classArchives.wouldMake(plan.image())) {
            d += java.util.concurrent.TimeUnit.SECONDS.toNanos(ClassArchives.makeSeconds(config));
        }
        return d;
    }

    /** At most one cold boot at a time stands in for clones that failed (see {@link #coldBootInstead}). */
    private final java.util.concurrent.Semaphore fallbackColdBoot = new java.util.concurrent.Semaphore(1);

    /**
     * Every clone of a sound template failed on its own — most often a restore that missed its
     * deadline on a loaded host. Such starts cold-boot instead one at a time, each within what is
     * left of its own deadline: a start that finds another one cold-booting waits for it (queued),
     * and one whose deadline passes while it waits fails with the clones' reasons — rather than
     * each adding the heaviest start there is to the load that made its clones fail (the bench
     * lost whole runs that way: eight restores at once, then cold boots that never reached READY).
     */
    private Sandbox coldBootInstead(StartPlan plan, long deadline, List<String> earlier,
            TemplateStarts.RestoresFailed failed) {
        SandboxException last = failed.last();
        boolean slot;
        try {
            slot = fallbackColdBoot.tryAcquire(Deadlines.remaining(deadline).toNanos(),
                    java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException("interrupted while waiting to cold-boot in place of failed clones", e);
        }
        if (!slot) {
            throw new BootFailedException("sandbox not started: every restore from template "
                    + failed.template().id() + " failed (" + String.join("; ", earlier) + "), and its boot deadline"
                    + " passed while other sandboxes of this backend cold-booted in place of their clones, one at a"
                    + " time (a cold boot is the heaviest start there is, and this host is loaded). Start fewer"
                    + " sandboxes at once, or raise SandboxConfig.bootTimeout", last, last.consoleTail(),
                    last.stderrTail());
        }
        try {
            String note = "cold-booting in place of the failed clones of template " + failed.template().id();
            progress.accept(note);
            earlier.add(note);
            return coldBoot.boot(plan, deadline, earlier);
        } finally {
            fallbackColdBoot.release();
        }
    }

    /** What an operator's tool may ask of this backend: its host, image, templates, reaping. */
    public BackendAdmin admin() {
        return new QemuBackendAdmin(planner, templates, this::buildTemplate, c -> templateKey(c).id(), this::reap,
                startupReap);
    }

    /** Sandboxes started by this backend and not closed yet. */
    public List<Sandbox> sandboxes() {
        return List.copyOf(running);
    }

    /** The guest architecture sandboxes of this backend run: the builder's, else the host's. */
    public Arch guestArch() {
        return planner.guestArch();
    }

    /** The limits the worker gets in HELLO, all from the config. */
    public static Limits limits(SandboxConfig c) {
        return VmStart.limits(c);
    }

    /** Closes every sandbox this backend started. Idempotent. */
    @Override
    public void close() {
        closed = true;
        for (QemuSandbox s : List.copyOf(running)) {
            try {
                s.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing " + s + ": " + e);
            }
        }
    }

    // ---- reaping -------------------------------------------------------------------------------

    /** What the reaper did when this backend was created (null if reaping was off). */
    ReapReport startupReap() {
        return startupReap;
    }

    /**
     * Stops QEMUs whose owner is gone and removes their state and cgroups ({@code
     * StaleSandboxReaper}). Empty cgroups older than a minute that no sandbox of this state
     * directory holds go too.
     *
     * @throws HostSetupException ({@code HOST_SETUP_NEEDED}) the state directory exists but is not
     *     a private directory of this user (shared, another user's, a symlink): nothing in it was
     *     read, nothing stopped or deleted
     */
    ReapReport reap() {
        try {
            ReapReport r = new StaleSandboxReaper(states, runtimeRoot, cgroupTree).reap();
            r.entries().forEach(e -> LOG.log(System.Logger.Level.INFO, "qvm reaper: " + e));
            cgroupTree.removeLeftovers(java.time.Duration.ofMinutes(1), id -> states.find(id).isPresent()
                    || running.stream().anyMatch(s -> s.id().equals(id)))
                    .forEach(id -> LOG.log(System.Logger.Level.INFO, "qvm reaper: removed the empty cgroup of " + id));
            return r;
        } catch (IOException e) {
            throw new SandboxException("cannot read the state directory " + states.root() + ": " + e.getMessage(), e);
        }
    }

    // ---- what the admin API (QemuBackendAdmin) and the tests ask ----------------------------------

    HostInfo host() {
        return planner.host();
    }

    AcceleratorChoice acceleratorChoice(SandboxConfig config) {
        return planner.acceleratorChoice(config);
    }

    ImageResolver imageResolver() {
        return planner.imageResolver();
    }

    /** The guest image and where it came from, resolved and verified as a sandbox start would. */
    ImageResolver.Resolved image() {
        return planner.image();
    }

    /** The key of the template sandboxes of {@code config} are cloned from here. */
    TemplateKey templateKey(SandboxConfig config) {
        return templateStarts.preferred(planner.plan(config)).key();
    }

    TemplateStore templateStore() {
        return templates;
    }

    /** Builds (or finds) the template of {@code config}; throws when templates cannot be used here. */
    Template buildTemplate(SandboxConfig config) {
        TemplateStarts.Plan plan = templateStarts.preferred(planner.plan(config));
        TemplateStarts.requireSupported(plan);
        runAs();
        return templateStarts.build(plan, deadline(System.nanoTime(), plan.start(), config));
    }

    // ---- what each VM runs under ---------------------------------------------------------------

    private VmStart.Context context() {
        return new VmStart.Context(states, runtimeRoot, progress, running::remove, runAs(), cgroups(), classArchives,
                pauseCheck);
    }

    /**
     * The cgroup tree QEMUs go into, prepared on first use, or empty where the host has none
     * for this process (cgroup v1, a read-only mount, not root): then QEMU runs without, which
     * is logged once and shown by {@code qvm doctor}.
     */
    private Optional<CgroupTree> cgroups() {
        Optional<CgroupTree> c = cgroups;
        if (c == null) {
            synchronized (this) {
                if (cgroups == null) {
                    try {
                        cgroupTree.prepare();
                        cgroups = Optional.of(cgroupTree);
                    } catch (IOException | RuntimeException e) {
                        LOG.log(System.Logger.Level.INFO, "qvm: QEMU runs without a cgroup of its own: " + e.getMessage());
                        cgroups = Optional.empty();
                    }
                }
                c = cgroups;
            }
        }
        return c;
    }

    /**
     * The user QEMU drops to (empty: this process is not root, QEMU runs as its user).
     *
     * @throws HostSetupException this process is root and there is no unprivileged user for QEMU
     */
    Optional<QemuUser.Account> runAs() {
        Optional<QemuUser.Account> r = runAs;
        if (r == null) {
            r = qemuUser.dropTo();
            runAs = r;
        }
        return r;
    }

    /** Builder for {@link QemuVmBackend}; every default lives here. */
    public static final class Builder {
        private Path imageRoot;
        private ImageResolver imageResolver;
        private Path imageKey;
        private Path stateRoot;
        private Path runtimeRoot;
        private Consumer<String> progress = line -> { };
        private boolean reapOnStart = true;
        private boolean useProbeCache = true;
        private HostProbe hostProbe;
        private io.qvm.internal.sandbox.QemuSandbox.PauseCheck pauseCheck = io.qvm.internal.sandbox.QemuSandbox.PauseCheck.DEFAULT;
        private Path templateRoot;
        private int maxTemplates = TemplateStore.DEFAULT_MAX_TEMPLATES;
        private long maxTemplateBytes = TemplateStore.DEFAULT_MAX_BYTES;
        private Boolean useTemplates;
        private Path classArchiveRoot;
        private Boolean useClassArchives;
        private Boolean templateWarmUp;
        private long classArchiveMaxBytes = ClassArchives.MAX_BYTES;
        private QemuUser qemuUser;
        private CgroupTree cgroupTree;
        private Arch guestArch;
        private Map<String, String> env;
        private int restoreSlots;

        private Builder() {
        }

        /**
         * How many clones this backend restores at once (default: one per core this JVM may use);
         * further starts queue for a slot, each within its boot deadline. A restore keeps a core
         * busy for a second or two; more at once than there are cores slows every one of them.
         */
        public Builder restoresAtOnce(int n) {
            if (n < 1 || n > 4096) {
                throw new IllegalArgumentException("restoresAtOnce must be 1..4096, got " + n);
            }
            this.restoreSlots = n;
            return this;
        }

        /**
         * The environment whose {@code QVM_*} variables set this backend's defaults (default: this
         * process's); what the builder sets explicitly wins.
         */
        public Builder environment(Map<String, String> variables) {
            this.env = Map.copyOf(variables);
            return this;
        }

        /**
         * The guest architecture (default: the host's). Another architecture runs under TCG with
         * that architecture's QEMU ({@code qemu-system-aarch64} for an aarch64 guest): what a
         * release gate on an x86_64 host uses to prove the aarch64 image.
         */
        public Builder guestArch(Arch arch) {
            this.guestArch = Objects.requireNonNull(arch, "arch");
            return this;
        }

        /**
         * The cgroup v2 tree each QEMU goes into with its memory and task limits (default
         * {@code CgroupTree.system()}, used where the host lets this process; else QEMU runs without).
         */
        Builder cgroups(CgroupTree tree) {
            this.cgroupTree = Objects.requireNonNull(tree, "tree");
            return this;
        }

        /**
         * Who QEMU runs as (default {@code QemuUser.system()}: this process's user, or, when this
         * process is root, {@code QVM_QEMU_USER} — {@code qvm} — which must exist).
         */
        Builder qemuUser(QemuUser user) {
            this.qemuUser = Objects.requireNonNull(user, "user");
            return this;
        }

        /**
         * Whether sandboxes start as clones of a template (default: yes, unless
         * {@code QVM_TEMPLATES=off}); where templates cannot work, sandboxes cold-boot anyway and
         * the reason is said once.
         */
        public Builder templates(boolean use) {
            this.useTemplates = use;
            return this;
        }

        /**
         * At most {@code maxTemplates} templates holding at most {@code maxBytes} are kept; after
         * each build the oldest others are deleted (default 8 and 16 GiB).
         */
        public Builder templateQuota(int maxTemplates, long maxBytes) {
            if (maxTemplates < 1 || maxBytes < 1) {
                throw new IllegalArgumentException("templateQuota needs at least one template and one byte, got "
                        + maxTemplates + " templates, " + maxBytes + " bytes");
            }
            this.maxTemplates = maxTemplates;
            this.maxTemplateBytes = maxBytes;
            return this;
        }

        /** Where templates are kept (default {@code $QVM_CACHE/templates} or {@code ~/.cache/qvm/templates}). */
        public Builder templateDirectory(Path root) {
            this.templateRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /**
         * Where the worker's class archives are kept, one per guest image (default
         * {@code $QVM_CACHE/class-archives}; adr/0018).
         */
        public Builder classArchiveDirectory(Path root) {
            this.classArchiveRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /**
         * Whether a template VM renders qvm's warm-up documents before it is saved, so every clone
         * starts with their classes, fonts and compiled code in memory (default: yes, unless
         * {@code QVM_TEMPLATE_WARMUP=off}; adr/0006). Off, a template builds faster (25–27 s less
         * under TCG here) and each clone's first document of a kind pays that work itself.
         * Warmed and unwarmed templates have different ids.
         */
        public Builder templateWarmUp(boolean warm) {
            this.templateWarmUp = warm;
            return this;
        }

        /**
         * Whether the first cold boot of an image makes the worker's class archive and later ones
         * use it (default: yes, unless {@code QVM_CLASS_ARCHIVES=off}; adr/0018).
         */
        public Builder classArchives(boolean use) {
            this.useClassArchives = use;
            return this;
        }

        /** The largest class archive a guest may write (a test's seam; default {@value ClassArchives#MAX_BYTES}). */
        Builder classArchiveMaxBytes(long max) {
            this.classArchiveMaxBytes = max;
            return this;
        }

        /**
         * The directory holding one image directory per architecture, and then the only place the
         * image is looked for (default: none, so {@code $QVM_IMAGE_DIR}, else the user cache, else
         * the local Maven repository).
         */
        public Builder imageDir(Path root) {
            this.imageRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /**
         * How the guest image is found (default {@code ImageResolver.system}, with {@link #imageDir}
         * if given; the two are exclusive).
         */
        Builder imageResolver(ImageResolver resolver) {
            this.imageResolver = Objects.requireNonNull(resolver, "resolver");
            return this;
        }

        /**
         * Requires every guest image to carry a valid OpenPGP signature of its {@code SHA256SUMS}
         * by the armoured public key in {@code publicKey} (default: {@code $QVM_IMAGE_KEY}, else
         * none required): an image without one is refused.
         */
        public Builder imageKey(Path publicKey) {
            this.imageKey = Objects.requireNonNull(publicKey, "publicKey");
            return this;
        }

        /**
         * The state directory (default {@code $QVM_STATE} or {@code ~/.local/state/qvm}): created
         * 0700; an existing one must be a real directory of this user with mode 0700, else the
         * backend refuses it ({@link HostSetupException}) and never reads or reaps what is in it.
         */
        public Builder stateDirectory(Path root) {
            this.stateRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /** Where sockets go (default: a short per-user runtime directory, {@link io.qvm.admin.SandboxStates#defaultRuntimeRoot()}). */
        public Builder runtimeDirectory(Path root) {
            this.runtimeRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /** Receives one human-readable line per boot step. */
        public Builder progress(Consumer<String> lines) {
            this.progress = Objects.requireNonNull(lines, "lines");
            return this;
        }

        /** Whether creating the backend reaps sandboxes of dead owners (default true). */
        public Builder reapOnStart(boolean reap) {
            this.reapOnStart = reap;
            return this;
        }

        /**
         * How the host is probed: where QEMU is found and how its version and accelerators are read
         * (default {@code HostProbe.system()}: this JVM's OS and CPU, {@code $QVM_QEMU}, PATH).
         */
        Builder hostProbe(HostProbe probe) {
            this.hostProbe = Objects.requireNonNull(probe, "probe");
            return this;
        }

        /** The check after each idle pause (default {@code PauseCheck.DEFAULT}; a fake QEMU's tests set their own). */
        Builder pauseCheck(io.qvm.internal.sandbox.QemuSandbox.PauseCheck check) {
            this.pauseCheck = Objects.requireNonNull(check, "check");
            return this;
        }

        /** Whether the accelerator probe's cached verdict may be used (default true). */
        public Builder useProbeCache(boolean use) {
            this.useProbeCache = use;
            return this;
        }

        public QemuVmBackend build() {
            return new QemuVmBackend(this);
        }
    }
}
