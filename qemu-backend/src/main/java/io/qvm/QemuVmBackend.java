package io.qvm;

import io.qvm.admin.BackendAdmin;
import io.qvm.backend.QvmEnvironment;
import io.qvm.backend.image.GuestImage;
import io.qvm.backend.image.ImageResolver;
import io.qvm.backend.image.ImageSignature;
import io.qvm.backend.probe.AcceleratorChoice;
import io.qvm.backend.probe.AcceleratorSelector;
import io.qvm.protocol.image.Arch;
import io.qvm.backend.probe.HostInfo;
import io.qvm.backend.probe.HostProbe;
import io.qvm.backend.probe.QemuInstallation;
import io.qvm.backend.process.CgroupTree;
import io.qvm.backend.process.QemuUser;
import io.qvm.backend.process.ReapReport;
import io.qvm.backend.process.SocketPaths;
import io.qvm.backend.process.StaleSandboxReaper;
import io.qvm.backend.process.StateDirectory;
import io.qvm.backend.qemu.MachineProfile;
import io.qvm.backend.qemu.QemuCommandInput;
import io.qvm.backend.qemu.TemplateSupport;
import io.qvm.backend.qemu.VmRole;
import io.qvm.backend.boot.CloneRestore;
import io.qvm.backend.boot.Deadlines;
import io.qvm.backend.boot.TemplateSave;
import io.qvm.backend.boot.VmStart;
import io.qvm.backend.template.Template;
import io.qvm.backend.template.TemplateException;
import io.qvm.backend.template.TemplateKey;
import io.qvm.backend.template.TemplateMode;
import io.qvm.backend.template.TemplateStore;
import io.qvm.backend.sandbox.QemuSandbox;
import io.qvm.protocol.Limits;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Optional;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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
 * version), find and verify the image ({@link ImageResolver}: the builder's {@link Builder#imageDir},
 * else {@code $QVM_IMAGE_DIR}, else the user cache, else the image artifact of this backend's
 * version in the local Maven repository), choose the transport, build the argv (a pure function),
 * record the sandbox in the state directory, launch QEMU, connect QMP, connect the worker
 * transport and complete HELLO/READY. A failure at any step stops QEMU and removes every file the
 * step created; the exception carries the guest console's and QEMU's stderr tails.
 *
 * <p>QEMU never runs as root: when this process is root, QEMU drops to {@code QVM_QEMU_USER}
 * ({@code qvm}) after its setup, and nothing starts if that user is missing ({@link QemuUser}).
 * It gets a minimal environment, and, where the host has a writable cgroup v2, a cgroup of its
 * own with the sandbox's memory and task limits ({@link CgroupTree}).
 *
 * <p>Creating a backend reaps sandboxes whose owner process is gone (a JVM killed with SIGKILL
 * cannot stop its QEMUs; the next backend does).
 */
public final class QemuVmBackend implements SandboxBackend {

    private static final System.Logger LOG = System.getLogger(QemuVmBackend.class.getName());

    private final ImageResolver imageResolver;
    /** The key images must be signed with, if one was configured. */
    private final Optional<ImageSignature> imageKey;
    private final StateDirectory states;
    private final Path runtimeRoot;
    private final Consumer<String> progress;
    private final HostProbe hostProbe;
    private final boolean useProbeCache;
    private final TemplateStore templates;
    private final boolean useTemplates;
    private final Set<QemuSandbox> running = ConcurrentHashMap.newKeySet();
    /** Template key id → why templates are off for it in this backend (said once). */
    private final Map<String, String> templatesOff = new ConcurrentHashMap<>();
    /** Template id → the random bytes its recent clones reported (a repeat means shared randomness). */
    private final Map<String, Set<String>> cloneRandoms = new ConcurrentHashMap<>();
    private final Map<String, AcceleratorChoice> choices = new ConcurrentHashMap<>();
    private final ReapReport startupReap;
    private final QemuUser qemuUser;
    private final CgroupTree cgroupTree;
    /** The guest architecture (null: the host's). */
    private final Arch guestArch;
    /** The cgroup tree once prepared, or empty when the host has none for QEMU (null: not tried yet). */
    private volatile Optional<CgroupTree> cgroups;
    /** Who QEMU drops to, once {@link #qemuUser} said so (a refusal is not kept: the fix takes effect at once). */
    private volatile Optional<QemuUser.Account> runAs;
    private volatile HostInfo host;
    private volatile boolean closed;

    private QemuVmBackend(Builder b) {
        QvmEnvironment env = b.env != null ? QvmEnvironment.of(b.env) : QvmEnvironment.system();
        if (b.imageRoot != null && b.imageResolver != null) {
            throw new IllegalStateException("both imageDir and imageResolver were set: give the directory to the "
                    + "resolver's builder instead");
        }
        this.imageResolver = b.imageResolver != null ? b.imageResolver : ImageResolver.system(b.imageRoot);
        this.imageKey = ImageSignature.configured(b.imageKey, env);
        this.states = StateDirectory.at(b.stateRoot != null ? b.stateRoot : env.stateRoot());
        this.runtimeRoot = b.runtimeRoot != null ? b.runtimeRoot : env.runtimeRoot();
        this.progress = b.progress;
        this.hostProbe = b.hostProbe != null ? b.hostProbe : HostProbe.system();
        this.useProbeCache = b.useProbeCache;
        this.templates = TemplateStore.at(b.templateRoot != null ? b.templateRoot : env.templateRoot())
                .withQuota(b.maxTemplates, b.maxTemplateBytes);
        this.useTemplates = b.useTemplates != null ? b.useTemplates : env.templatesEnabled();
        this.qemuUser = b.qemuUser != null ? b.qemuUser : QemuUser.system(env);
        this.cgroupTree = b.cgroupTree != null ? b.cgroupTree : CgroupTree.system();
        this.guestArch = b.guestArch;
        this.startupReap = b.reapOnStart ? reap() : null;
    }

    /** Set to {@code off} to make every sandbox cold-boot (the builder's {@code templates(false)}). */
    public static final String ENV_TEMPLATES = QvmEnvironment.TEMPLATES;

    /**
     * A backend with every default ({@link QvmEnvironment}; the image from {@code $QVM_IMAGE_DIR},
     * else the user cache, else the local Maven repository: {@link ImageResolver}).
     */
    public static QemuVmBackend create() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** What an operator's tool may ask of this backend: its host, image, templates, reaping. */
    public BackendAdmin admin() {
        return new QemuBackendAdmin(this);
    }

    /** What the reaper did when this backend was created (null if reaping was off). */
    ReapReport startupReap() {
        return startupReap;
    }

    /**
     * Stops QEMUs whose owner is gone and removes their state and cgroups; see
     * {@link StaleSandboxReaper}. Empty cgroups older than a minute that no sandbox of this state
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

    /** The host as probed (once per backend). */
    HostInfo host() {
        HostInfo h = host;
        if (h == null) {
            synchronized (this) {
                if (host == null) {
                    host = hostProbe.probe();
                }
                h = host;
            }
        }
        return h;
    }

    /** The accelerator a sandbox with {@code config} would run on (the probe's verdict is cached). */
    AcceleratorChoice acceleratorChoice(SandboxConfig config) {
        HostInfo h = host();
        h.requireUntranslated(config.accelerator()); // before the image: under Rosetta the x86_64 one is the wrong pick
        return choose(config, h, image(guestArch(h)).image());
    }

    /** The guest architecture sandboxes of this backend run: the builder's, else the host's. */
    public Arch guestArch() {
        return guestArch(host());
    }

    private Arch guestArch(HostInfo h) {
        return guestArch != null ? guestArch : h.arch();
    }

    private AcceleratorChoice choose(SandboxConfig config, HostInfo h, GuestImage image) {
        return choices.computeIfAbsent(config.accelerator() + "/" + image.arch(), k -> {
            AcceleratorChoice c = AcceleratorSelector.builder().kernel(image.kernel()).useCache(useProbeCache)
                    .runAs(runAs().map(QemuUser.Account::name)).build()
                    .select(config.accelerator(), h, image.arch());
            c.warning().ifPresent(progress);
            return c;
        });
    }

    /** Sandboxes started by this backend and not closed yet. */
    public List<Sandbox> sandboxes() {
        return List.copyOf(running);
    }

    /**
     * How many times a boot is tried when the worker process itself dies before READY (status
     * other than 0, reported by the guest init). Runtimes with a JIT occasionally abort at start
     * under gVisor (seen here: the worker JVM ended with status 134 in about 2 of 25 boots, before
     * printing anything); a fresh VM then boots normally. Every other failure is final at once.
     * All attempts share the one boot deadline.
     */
    static final int BOOT_ATTEMPTS = 2;

    @Override
    public Sandbox start(SandboxConfig config) {
        Objects.requireNonNull(config, "config");
        if (closed) {
            throw new IllegalStateException("this backend is closed");
        }
        runAs(); // as root with no user for QEMU, nothing starts (not even a template build)
        long deadline = Deadlines.after(config.bootTimeout());
        List<String> earlier = new ArrayList<>();
        if (useTemplates) {
            Optional<Sandbox> clone = startFromTemplate(config, deadline, earlier);
            if (clone.isPresent()) {
                return clone.get();
            }
        }
        return coldBoot(config, deadline, earlier);
    }

    private Sandbox coldBoot(SandboxConfig config, long deadline, List<String> earlier) {
        if (Thread.currentThread().isInterrupted()) {
            throw new SandboxException("interrupted before the sandbox could start");
        }
        for (int attempt = 1; ; attempt++) {
            try {
                return attempt(config, deadline, earlier);
            } catch (BootFailedException e) {
                if (!retriable(e) || attempt >= BOOT_ATTEMPTS || Deadlines.passed(deadline)) {
                    throw e;
                }
                note(earlier, "boot attempt " + attempt + " failed: " + why(e) + "; retried in a fresh VM", e);
            }
        }
    }

    private static boolean retriable(BootFailedException e) {
        return e.workerExitStatus().map(s -> s != 0).orElse(false) || e.guestStalled();
    }

    private static String why(BootFailedException e) {
        return e.workerExitStatus().filter(s -> s != 0).map(s -> "the worker exited with status " + s + " before READY")
                .orElse(e.guestStalled() ? "the guest stalled before the init ran runsc" : e.getMessage());
    }

    private void note(List<String> earlier, String note, Exception e) {
        progress.accept(note);
        LOG.log(System.Logger.Level.WARNING, note + "\n" + e.getMessage());
        earlier.add(note);
    }

    // ---- templates and clones --------------------------------------------------------------

    /** Which template a sandbox of {@code config} restores from, and how it is made. */
    private record Plan(TemplateKey key, TemplateMode mode, QemuCommandInput input, VmStart.Target target,
            MachineProfile profile) {
    }

    /**
     * A sandbox restored from the template of {@code config} (built first if needed), or empty
     * when templates cannot serve this config here — the reason said once per backend and
     * config. Any clone failure falls through to a cold boot.
     */
    private Optional<Sandbox> startFromTemplate(SandboxConfig config, long deadline, List<String> earlier) {
        // no QEMU, no image, no accelerator: thrown as they are (a cold boot would fail the same way)
        Plan full = plan(config, TemplateMode.FULL);
        // decided from the probe's cached capabilities: no QEMU starts to find out
        TemplateSupport support = TemplateSupport.of(full.input());
        if (support.level() == TemplateSupport.Level.NONE) {
            sayOnce(full.key().id(), "templates are not used for this sandbox (" + support.reason()
                    + "): every sandbox cold-boots");
            return Optional.empty();
        }
        for (TemplateMode mode : TemplateMode.values()) {
            Plan plan = mode == TemplateMode.FULL ? full : plan(config, mode);
            if (mode == TemplateMode.SHARED_RAM && support.level() != TemplateSupport.Level.SHARED_RAM) {
                sayOnce(plan.key().id(), "shared-RAM templates are not used here: " + support.reason());
                continue;
            }
            String off = templatesOff.get(plan.key().id());
            if (off != null) {
                continue; // this mode failed before in this backend: the next mode, then cold boot
            }
            Template template;
            try {
                template = templates.obtain(plan.key(), mode, (dir, m) -> buildTemplate(plan, dir, deadline),
                        progress);
            } catch (SandboxException e) {
                if (Thread.currentThread().isInterrupted()) {
                    throw e;
                }
                String next = mode == TemplateMode.SHARED_RAM ? "trying a full-state template" : "cold-booting instead";
                sayOnce(plan.key().id(), "cannot build a " + mode.id() + " template: "
                        + e.getMessage().lines().findFirst().orElse("") + "; " + next);
                LOG.log(System.Logger.Level.WARNING, "template build failed", e);
                continue;
            }
            for (int attempt = 1; attempt <= BOOT_ATTEMPTS && !Deadlines.passed(deadline); attempt++) {
                try {
                    return Optional.of(restore(plan, template, deadline, earlier));
                } catch (TemplateException e) {
                    // the template itself is at fault (QEMU refused it, clones share randomness)
                    templates.discard(template.id());
                    sayOnce(plan.key().id(), "template " + template.id() + " is unusable: " + e.getMessage()
                            + "; it was deleted, and this backend cold-boots sandboxes of this config");
                    return Optional.empty();
                } catch (SandboxException e) {
                    if (Thread.currentThread().isInterrupted()) {
                        throw e; // the caller gave up (a pool closing): no second clone, no cold boot
                    }
                    note(earlier, "restore attempt " + attempt + " from template " + template.id() + " failed: "
                            + e.getMessage().lines().findFirst().orElse("") + (attempt < BOOT_ATTEMPTS
                            ? "; trying a fresh clone" : "; cold-booting instead"), e);
                }
            }
            return Optional.empty();
        }
        return Optional.empty();
    }

    private void sayOnce(String keyId, String why) {
        if (templatesOff.putIfAbsent(keyId, why) == null) {
            progress.accept("qvm: " + why);
            LOG.log(System.Logger.Level.WARNING, why);
        }
    }

    /** The template mode sandboxes of {@code config} use here: shared RAM where it is possible and safe, else the full state. */
    private Plan preferredPlan(SandboxConfig config) {
        Plan shared = plan(config, TemplateMode.SHARED_RAM);
        return TemplateSupport.of(shared.input()).level() == TemplateSupport.Level.SHARED_RAM ? shared
                : plan(config, TemplateMode.FULL);
    }

    private Plan plan(SandboxConfig config, TemplateMode mode) {
        VmStart.Target target = target(config);
        HostInfo h = target.host();
        Arch guest = target.image().arch();
        QemuInstallation qemuInstall = target.qemu();
        GuestImage image = target.image();
        AcceleratorChoice accel = target.accel();
        QemuCommandInput input = TemplateKey.placeholders(QemuCommandInput.builder().host(h.os(), h.arch())
                .guestArch(guest).accelerator(accel.accelerator()).qemu(qemuInstall)
                .config(config), mode, image).build();
        MachineProfile profile = MachineProfile.select(h.os(), h.arch(), guest, accel.accelerator(),
                qemuInstall.version(), true, qemuInstall.capabilities());
        TemplateKey key = TemplateKey.of(input, mode, image, qemuInstall);
        return new Plan(key, mode, input, target, profile);
    }

    /** The template's key for {@code config} on this host (what {@code qvm template ls} shows). */
    TemplateKey templateKey(SandboxConfig config) {
        return preferredPlan(config).key();
    }

    /** Where this backend keeps templates. */
    TemplateStore templateStore() {
        return templates;
    }

    /**
     * Builds (or finds) the template of {@code config} without starting a sandbox.
     *
     * @throws SandboxException when templates cannot be used for it here, or the build failed
     */
    Template buildTemplate(SandboxConfig config) {
        Plan plan = preferredPlan(config);
        TemplateSupport support = TemplateSupport.of(plan.input());
        if (support.level() == TemplateSupport.Level.NONE) {
            throw new TemplateException("templates are not used here: " + support.reason());
        }
        runAs();
        long deadline = Deadlines.after(config.bootTimeout());
        return templates.obtain(plan.key(), plan.mode(), (dir, m) -> buildTemplate(plan, dir, deadline), progress);
    }

    /** Boots the template VM to READY (retried like a cold boot), then saves it: {@link TemplateSave}. */
    private TemplateStore.Built buildTemplate(Plan plan, Path dir, long deadline) throws Exception {
        progress.accept("template " + plan.key().id() + ": booting the template VM (" + plan.mode().id()
                + "; once per image, QEMU and config)");
        Optional<Path> ram = plan.mode() == TemplateMode.SHARED_RAM ? Optional.of(dir.resolve(Template.RAM))
                : Optional.empty();
        for (int attempt = 1; ; attempt++) {
            try {
                if (ram.isPresent()) {
                    java.nio.file.Files.deleteIfExists(ram.get()); // a failed attempt's pages
                }
                VmStart v = VmStart.launch(context(), plan.target(), plan.input().config(), new VmRole.Template(ram),
                        deadline);
                v.awaitWorker(deadline);
                return TemplateSave.save(v, v.toSandbox(v.report(List.of(), Optional.empty())), dir, plan.mode());
            } catch (BootFailedException e) {
                if (!retriable(e) || attempt >= BOOT_ATTEMPTS || Deadlines.passed(deadline)
                        || Thread.currentThread().isInterrupted()) {
                    throw e;
                }
                note(new ArrayList<>(), "template boot attempt " + attempt + " failed: " + why(e)
                        + "; retried in a fresh VM", e);
            }
        }
    }

    /** A clone of {@code template}, proven (see {@link CloneRestore}), among this backend's sandboxes. */
    private Sandbox restore(Plan plan, Template template, long deadline, List<String> earlier) {
        QemuSandbox done = CloneRestore.restore(context(), plan.target(), plan.input().config(), template,
                random -> freshRandom(template, random), earlier, deadline);
        running.add(done);
        return done;
    }

    /** Whether no earlier clone of {@code template} (of the last 256) reported these random bytes. */
    private boolean freshRandom(Template template, String random) {
        Set<String> seen = cloneRandoms.computeIfAbsent(template.id(),
                k -> Collections.synchronizedSet(Collections.newSetFromMap(new java.util.LinkedHashMap<>() {
                    private static final long serialVersionUID = 1L;

                    @Override
                    protected boolean removeEldestEntry(Map.Entry<String, Boolean> e) {
                        return size() > 256;
                    }
                })));
        return seen.add(random);
    }

    private final Map<Arch, ImageSeen> images = new ConcurrentHashMap<>();

    /** A resolved image and what its files looked like then. */
    private record ImageSeen(ImageResolver.Resolved resolved, Map<Path, String> stamps) {
    }

    /** How this backend finds its guest image. */
    ImageResolver imageResolver() {
        return imageResolver;
    }

    /**
     * The guest image for this backend's guest architecture and where it came from, resolved and
     * verified as a sandbox start would ({@link #image}).
     */
    ImageResolver.Resolved image() {
        return image(guestArch(host()));
    }

    /**
     * The guest image, found and verified (every SHA-256, some 0.2 s for its 60 MB) the first time
     * and again whenever a file it rests on (for an image from the Maven repository: the zip too)
     * changed size, mtime or inode since — not on every start, which for a clone would cost more
     * than the restore itself. Where it came from is said once, and again when that changes.
     */
    private ImageResolver.Resolved image(Arch guest) {
        ImageSeen seen = images.get(guest);
        if (seen != null && seen.stamps().equals(stamps(seen.resolved()))) {
            return seen.resolved();
        }
        ImageResolver.Resolved r = imageResolver.resolve(guest);
        imageKey.ifPresent(k -> k.check(r.image()));
        images.put(guest, new ImageSeen(r, stamps(r)));
        if (seen == null || !seen.resolved().describe().equals(r.describe())) {
            progress.accept("guest image: " + r.describe());
        }
        return r;
    }

    private static Map<Path, String> stamps(ImageResolver.Resolved r) {
        Map<Path, String> out = new java.util.TreeMap<>();
        for (Path p : r.files()) {
            try {
                Object ino = java.nio.file.Files.getFileStore(p).supportsFileAttributeView("unix")
                        ? java.nio.file.Files.getAttribute(p, "unix:ino") : "";
                out.put(p, java.nio.file.Files.size(p) + "|" + java.nio.file.Files.getLastModifiedTime(p) + "|" + ino);
            } catch (IOException e) {
                out.put(p, "missing");
            }
        }
        return out;
    }

    // ---- one VM ---------------------------------------------------------------------------------

    private Sandbox attempt(SandboxConfig config, long deadline, List<String> earlierAttempts) {
        VmStart v = VmStart.launch(context(), target(config), config, VmRole.cold(), deadline);
        v.awaitWorker(deadline);
        QemuSandbox sandbox = v.toSandbox(v.report(earlierAttempts, Optional.empty()));
        progress.accept("sandbox " + v.id() + ": ready in " + sandbox.bootReport().total().toMillis() + " ms");
        running.add(sandbox);
        return sandbox;
    }

    private VmStart.Context context() {
        return new VmStart.Context(states, runtimeRoot, progress, running::remove, runAs(), cgroups());
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

    /** The host, its QEMU, the verified image and the accelerator for {@code config}. */
    private VmStart.Target target(SandboxConfig config) {
        HostInfo h = host();
        h.requireUntranslated(config.accelerator()); // before the image: under Rosetta the x86_64 one is the wrong pick
        Arch guest = guestArch(h);
        QemuInstallation qemuInstall = h.requireQemu(guest);
        GuestImage image = image(guest).image();
        return new VmStart.Target(h, qemuInstall, image, choose(config, h, image));
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
        private Path templateRoot;
        private int maxTemplates = TemplateStore.DEFAULT_MAX_TEMPLATES;
        private long maxTemplateBytes = TemplateStore.DEFAULT_MAX_BYTES;
        private Boolean useTemplates;
        private QemuUser qemuUser;
        private CgroupTree cgroupTree;
        private Arch guestArch;
        private Map<String, String> env;

        private Builder() {
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
         * {@link CgroupTree#system()}, used where the host lets this process; else QEMU runs without).
         */
        Builder cgroups(CgroupTree tree) {
            this.cgroupTree = Objects.requireNonNull(tree, "tree");
            return this;
        }

        /**
         * Who QEMU runs as (default {@link QemuUser#system()}: this process's user, or, when this
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
         * each build the oldest others are deleted (default {@value TemplateStore#DEFAULT_MAX_TEMPLATES}
         * and 16 GiB).
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
         * The directory holding one image directory per architecture, and then the only place the
         * image is looked for (default: none, so {@code $QVM_IMAGE_DIR}, else the user cache, else
         * the local Maven repository; {@link ImageResolver}).
         */
        public Builder imageDir(Path root) {
            this.imageRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /**
         * How the guest image is found (default {@link ImageResolver#system}, with {@link #imageDir}
         * if given; the two are exclusive).
         */
        Builder imageResolver(ImageResolver resolver) {
            this.imageResolver = Objects.requireNonNull(resolver, "resolver");
            return this;
        }

        /**
         * Requires every guest image to carry a valid OpenPGP signature of its {@code SHA256SUMS}
         * by the armoured public key in {@code publicKey} (default: {@code $QVM_IMAGE_KEY}, else
         * none required): an image without one is refused ({@link ImageSignature}).
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

        /** Where sockets go (default: a short per-user runtime directory, see {@link SocketPaths}). */
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
         * (default {@link HostProbe#system()}: this JVM's OS and CPU, {@code $QVM_QEMU}, PATH).
         */
        Builder hostProbe(HostProbe probe) {
            this.hostProbe = Objects.requireNonNull(probe, "probe");
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
