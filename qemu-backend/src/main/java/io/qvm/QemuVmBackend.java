package io.qvm;

import io.qvm.backend.image.GuestImage;
import io.qvm.backend.probe.AcceleratorChoice;
import io.qvm.backend.probe.AcceleratorSelector;
import io.qvm.protocol.image.Arch;
import io.qvm.backend.probe.HostInfo;
import io.qvm.backend.probe.HostProbe;
import io.qvm.backend.probe.QemuInstallation;
import io.qvm.backend.process.QemuProcess;
import io.qvm.backend.process.QemuProcessException;
import io.qvm.backend.process.ReapReport;
import io.qvm.backend.process.SandboxState;
import io.qvm.backend.process.SocketPaths;
import io.qvm.backend.process.StaleSandboxReaper;
import io.qvm.backend.process.StateDirectory;
import io.qvm.backend.qemu.GuestTransport;
import io.qvm.backend.qemu.MachineProfile;
import io.qvm.backend.qemu.QemuCommand;
import io.qvm.backend.qemu.QemuCommandInput;
import io.qvm.backend.qemu.VmRole;
import io.qvm.backend.qmp.QmpClient;
import io.qvm.backend.qmp.QmpEvent;
import io.qvm.backend.sandbox.ConsoleWatcher;
import io.qvm.backend.sandbox.GuestControl;
import io.qvm.backend.template.MigrationStream;
import io.qvm.backend.template.Template;
import io.qvm.backend.template.TemplateException;
import io.qvm.backend.template.TemplateKey;
import io.qvm.backend.template.TemplateMode;
import io.qvm.backend.template.TemplateStore;
import io.qvm.backend.sandbox.QemuSandbox;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import io.qvm.protocol.WorkerStatus;
import io.qvm.transport.netty.SerialTransport;
import io.qvm.transport.netty.VsockTransport;
import io.qvm.transport.vsock.GuestCidAllocator;
import io.qvm.transport.vsock.VsockSupport;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
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
 * version), load and verify the image, choose the transport, build the argv (a pure function),
 * record the sandbox in the state directory, launch QEMU, connect QMP, connect the worker
 * transport and complete HELLO/READY. A failure at any step stops QEMU and removes every file the
 * step created; the exception carries the guest console's and QEMU's stderr tails.
 *
 * <p>Creating a backend reaps sandboxes whose owner process is gone (a JVM killed with SIGKILL
 * cannot stop its QEMUs; the next backend does).
 */
public final class QemuVmBackend implements SandboxBackend {

    private static final System.Logger LOG = System.getLogger(QemuVmBackend.class.getName());

    private final Path imageRoot;
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
    private volatile HostInfo host;
    private volatile boolean closed;

    private QemuVmBackend(Builder b) {
        this.imageRoot = b.imageRoot != null ? b.imageRoot : GuestImage.defaultRoot();
        this.states = b.stateRoot != null ? StateDirectory.at(b.stateRoot) : StateDirectory.defaultLocation();
        this.runtimeRoot = b.runtimeRoot != null ? b.runtimeRoot : SocketPaths.defaultRuntimeRoot();
        this.progress = b.progress;
        this.hostProbe = b.hostProbe != null ? b.hostProbe : HostProbe.system();
        this.useProbeCache = b.useProbeCache;
        this.templates = b.templateRoot != null ? TemplateStore.at(b.templateRoot) : TemplateStore.defaultLocation();
        this.useTemplates = b.useTemplates != null ? b.useTemplates : !"off".equals(System.getenv(ENV_TEMPLATES));
        this.startupReap = b.reapOnStart ? reap() : null;
    }

    /** Set to {@code off} to make every sandbox cold-boot (the builder's {@code templates(false)}). */
    public static final String ENV_TEMPLATES = "QVM_TEMPLATES";

    /** A backend with every default (image under {@code out/image} or {@code $QVM_IMAGE_DIR}). */
    public static QemuVmBackend create() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** What the reaper did when this backend was created (null if reaping was off). */
    public ReapReport startupReap() {
        return startupReap;
    }

    /** Stops QEMUs whose owner is gone and removes their state; see {@link StaleSandboxReaper}. */
    public ReapReport reap() {
        try {
            ReapReport r = new StaleSandboxReaper(states).reap();
            r.entries().forEach(e -> LOG.log(System.Logger.Level.INFO, "qvm reaper: " + e));
            return r;
        } catch (IOException e) {
            throw new SandboxException("cannot read the state directory " + states.root() + ": " + e.getMessage(), e);
        }
    }

    /** The host as probed (once per backend). */
    public HostInfo host() {
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
    public AcceleratorChoice acceleratorChoice(SandboxConfig config) {
        HostInfo h = host();
        return choose(config, h, image(h.arch()));
    }

    private AcceleratorChoice choose(SandboxConfig config, HostInfo h, GuestImage image) {
        return choices.computeIfAbsent(config.accelerator() + "/" + image.arch(), k -> {
            AcceleratorChoice c = AcceleratorSelector.builder().kernel(image.kernel()).useCache(useProbeCache).build()
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

    /**
     * A guest whose console stays silent this long before the init reaches {@code runsc} is
     * stuck: under TCG a kernel occasionally stops making progress early in its boot (seen here
     * once at PCI enumeration on q35, and at clock calibration on microvm — adr/0001). Such a boot
     * is stopped and, like a worker that died, tried once more in a fresh VM. A kernel boot prints
     * continuously: in the boot consoles read here the longest quiet stretch was the initramfs
     * unpacking, a few seconds.
     */
    static final Duration GUEST_STALL = Duration.ofSeconds(90);

    @Override
    public Sandbox start(SandboxConfig config) {
        Objects.requireNonNull(config, "config");
        if (closed) {
            throw new IllegalStateException("this backend is closed");
        }
        long deadline = System.nanoTime() + config.bootTimeout().toNanos();
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
                if (!retriable(e) || attempt >= BOOT_ATTEMPTS || System.nanoTime() >= deadline) {
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
    private record Plan(TemplateKey key, TemplateMode mode, QemuCommandInput input, GuestImage image,
            QemuInstallation qemu, AcceleratorChoice accel, MachineProfile profile) {
    }

    /**
     * A sandbox restored from the template of {@code config} (built first if needed), or empty
     * when templates cannot serve this config here — the reason said once per backend and
     * config. Any clone failure falls through to a cold boot.
     */
    private Optional<Sandbox> startFromTemplate(SandboxConfig config, long deadline, List<String> earlier) {
        for (TemplateMode mode : TemplateMode.values()) {
            // no QEMU, no image, no accelerator: thrown as they are (a cold boot would fail the same way)
            Plan plan = plan(config, mode);
            String off = templatesOff.get(plan.key().id());
            Optional<String> unsupported = unsupported(plan);
            if (unsupported.isPresent()) {
                sayOnce(plan.key().id(), "templates are not used for this sandbox (" + unsupported.get()
                        + "): every sandbox cold-boots");
                return Optional.empty();
            }
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
            for (int attempt = 1; attempt <= BOOT_ATTEMPTS && System.nanoTime() < deadline; attempt++) {
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

    /** Why templates cannot work for {@code plan} on this host, if they cannot. */
    private static Optional<String> unsupported(Plan plan) {
        if (plan.input().config().transport() == TransportPreference.VSOCK) {
            return Optional.of("vsock was requested, and clones talk over virtio-serial");
        }
        if (!plan.profile().vmgenid()) {
            return Optional.of("machine " + plan.profile().machine().split(",")[0] + " of a "
                    + plan.image().arch().qemuName() + " guest has no vmgenid device, so clones would share the "
                    + "guest's randomness");
        }
        return Optional.empty();
    }

    private Plan plan(SandboxConfig config, TemplateMode mode) {
        HostInfo h = host();
        Arch guest = h.arch();
        QemuInstallation qemuInstall = h.requireQemu(guest);
        GuestImage image = image(guest);
        AcceleratorChoice accel = choose(config, h, image);
        GuestTransport transport = new GuestTransport.Serial(Path.of("/qvm-template/run/worker.sock"));
        QemuCommandInput input = QemuCommandInput.builder().host(h.os(), h.arch()).guestArch(guest)
                .accelerator(accel.accelerator()).qemu(qemuInstall.binary(), qemuInstall.version()).config(config)
                .image(image.kernel(), image.initrd()).qmpSocket(Path.of("/qvm-template/run/qmp.sock"))
                .consoleLog(Path.of("/qvm-template/run/console.log")).pidFile(Path.of("/qvm-template/run/qemu.pid"))
                .controlSocket(Path.of("/qvm-template/run/control.sock")).transport(transport).build();
        MachineProfile profile = MachineProfile.select(h.os(), h.arch(), guest, accel.accelerator(),
                qemuInstall.version(), true);
        TemplateKey key = TemplateKey.of(input, mode, image, qemuInstall);
        return new Plan(key, mode, input, image, qemuInstall, accel, profile);
    }

    /** The template's key for {@code config} on this host (what {@code qvm template ls} shows). */
    public TemplateKey templateKey(SandboxConfig config) {
        return plan(config, TemplateMode.SHARED_RAM).key();
    }

    /** Where this backend keeps templates. */
    public TemplateStore templateStore() {
        return templates;
    }

    /**
     * Builds (or finds) the template of {@code config} without starting a sandbox.
     *
     * @throws SandboxException when templates cannot be used for it here, or the build failed
     */
    public Template buildTemplate(SandboxConfig config) {
        Plan plan = plan(config, TemplateMode.SHARED_RAM);
        Optional<String> unsupported = unsupported(plan);
        if (unsupported.isPresent()) {
            throw new TemplateException("templates are not used here: " + unsupported.get());
        }
        long deadline = System.nanoTime() + config.bootTimeout().toNanos();
        return templates.obtain(plan.key(), plan.mode(), (dir, m) -> buildTemplate(plan, dir, deadline), progress);
    }

    /**
     * Boots the template VM to READY, saves it into {@code dir} and quits it. The host stays
     * connected to both ports while the VM is saved: a virtio-serial port whose host end
     * disconnects reads as end of input in the guest, which would end the worker (FINDINGS).
     */
    private TemplateStore.Built buildTemplate(Plan plan, Path dir, long deadline) throws Exception {
        progress.accept("template " + plan.key().id() + ": booting the template VM (" + plan.mode().id()
                + "; once per image, QEMU and config)");
        Optional<Path> ram = plan.mode() == TemplateMode.SHARED_RAM ? Optional.of(dir.resolve(Template.RAM))
                : Optional.empty();
        Launch l = null;
        QemuSandbox vm = null;
        for (int attempt = 1; vm == null; attempt++) {
            try {
                if (ram.isPresent()) {
                    java.nio.file.Files.deleteIfExists(ram.get()); // a failed attempt's pages
                }
                l = launch(plan.input().config(), new VmRole.Template(ram), deadline);
                try {
                    handshake(l, deadline);
                    vm = l.toSandbox(l.report(List.of(), Optional.empty()));
                } catch (RuntimeException | IOException | InterruptedException e) {
                    if (e instanceof InterruptedException) {
                        Thread.currentThread().interrupt();
                    }
                    throw l.fail(e, l.stalled);
                }
            } catch (BootFailedException e) {
                if (!retriable(e) || attempt >= BOOT_ATTEMPTS || System.nanoTime() >= deadline
                        || Thread.currentThread().isInterrupted()) {
                    throw e;
                }
                note(new ArrayList<>(), "template boot attempt " + attempt + " failed: " + why(e)
                        + "; retried in a fresh VM", e);
            }
        }
        try {
            l.control.ping(Duration.ofSeconds(10));
            MigrationStream.Saved saved = MigrationStream.save(l.qmp, l.sockets.migration(),
                    dir.resolve(Template.STATE), plan.mode() == TemplateMode.SHARED_RAM, Duration.ofSeconds(120));
            return new TemplateStore.Built(plan.input().config().memoryMib(), vm.bootReport().total().toMillis(),
                    saved.took().toMillis());
        } finally {
            // Never resume a saved template: its clones map the pages it would write. quit, no GOODBYE.
            vm.discard();
        }
    }

    /**
     * Starts a clone of {@code template}: QEMU paused with {@code -incoming defer}, the state
     * restored, {@code cont}, then the clone proves itself — the guest init sets the clock and
     * reports the CRNG reseed, a fresh HELLO with a new nonce is answered, and a STATUS shows the
     * worker's clock and randomness.
     */
    private Sandbox restore(Plan plan, Template template, long deadline, List<String> earlier) {
        // template was verified by templates.obtain() for this very start (adr/0006: every use)
        Launch p = launch(plan.input().config(), new VmRole.Clone(template.ramFile()), deadline);
        long startNanos = p.startNanos;
        try {
            Map<String, Duration> phases = p.phases;
            Duration restoreTimeout = min(remaining(deadline), Duration.ofSeconds(60));
            MigrationStream.restore(p.qmp, p.sockets.migration(), template.stateFile(),
                    template.mode() == TemplateMode.SHARED_RAM, restoreTimeout);
            phases.put("state-loaded", since(startNanos));
            p.qmp.cont();
            phases.put("resumed", since(startNanos));
            // The fresh HELLO goes out while the init sets the clock: the worker's answer (its
            // urandom drain included, see Entropy) does not depend on either. What does — the
            // STATUS below — comes after both.
            Hello hello = Hello.fresh(limits(plan.input().config()));
            Duration helloDeadline = remaining(deadline);
            java.util.concurrent.CompletableFuture<Ready> handshake = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> {
                        try {
                            return p.transport.handshake(hello, helloDeadline);
                        } catch (TransportException | InterruptedException e) {
                            throw new java.util.concurrent.CompletionException(e);
                        }
                    });
            GuestControl.Restored r = p.control.restore(Instant.now(), min(remaining(deadline), Duration.ofSeconds(20)));
            phases.put("clock-set", since(startNanos));
            if (r.forks() < 1) {
                handshake.cancel(true);
                throw new TemplateException("the guest kernel did not reseed its random generator after the restore "
                        + "(no 'crng reseeded due to virtual machine fork' within the init's wait): clones would share "
                        + "randomness");
            }
            Ready ready;
            try {
                ready = handshake.get(remaining(deadline).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable c = e.getCause() instanceof java.util.concurrent.CompletionException ce && ce.getCause() != null
                        ? ce.getCause() : e.getCause();
                if (c instanceof IOException io) {
                    throw io;
                }
                if (c instanceof RuntimeException re) {
                    throw re;
                }
                throw new SandboxException("the clone's handshake failed: " + c, c);
            }
            phases.put("worker-ready", since(startNanos));
            WorkerStatus status = awaitClock(p.transport, deadline);
            phases.put("status-checked", since(startNanos));
            checkStatus(template, status);
            QemuSandbox done = p.toSandbox(new BootReport(plan.accel().accelerator().qemuName(),
                    plan.profile().machine().split(",")[0], p.transport.kind(), phases,
                    cloneNotes(earlier, plan, template, ready, status), Optional.of(template.id())));
            progress.accept("sandbox " + p.id + ": restored from template " + template.id() + " in "
                    + phases.get("worker-ready").toMillis() + " ms");
            running.add(done);
            return done;
        } catch (TemplateException e) {
            p.fail(e, false);
            throw e;
        } catch (RuntimeException | IOException | InterruptedException | java.util.concurrent.ExecutionException
                | java.util.concurrent.TimeoutException | io.qvm.backend.qmp.QmpException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw p.fail(e, false);
        }
    }

    private List<String> cloneNotes(List<String> earlier, Plan plan, Template template, Ready ready,
            WorkerStatus status) {
        List<String> notes = new ArrayList<>(earlier);
        plan.accel().warning().ifPresent(notes::add);
        notes.add("restored from template " + template.id() + " (" + template.mode().id() + "); worker clock "
                + (status.wallClockMillis() - System.currentTimeMillis()) + " ms from the host's, random bytes of "
                + "its own");
        notes.add("worker " + ready.version() + " capabilities " + ready.capabilities());
        return notes;
    }

    /**
     * The clone's own view of itself: its clock within {@link #MAX_CLOCK_SKEW} of the host's, and
     * random bytes no earlier clone of this template reported.
     */
    private void checkStatus(Template template, WorkerStatus status) {
        long skew = Math.abs(status.wallClockMillis() - System.currentTimeMillis());
        if (skew > MAX_CLOCK_SKEW.toMillis()) {
            throw new SandboxException("the restored worker's clock is " + skew + " ms off the host's although the "
                    + "init set it: refusing the clone");
        }
        Set<String> seen = cloneRandoms.computeIfAbsent(template.id(),
                k -> Collections.synchronizedSet(Collections.newSetFromMap(new java.util.LinkedHashMap<>() {
                    private static final long serialVersionUID = 1L;

                    @Override
                    protected boolean removeEldestEntry(Map.Entry<String, Boolean> e) {
                        return size() > 256;
                    }
                })));
        if (!seen.add(status.random())) {
            throw new TemplateException("two clones of template " + template.id() + " read the same bytes from "
                    + "/dev/urandom: their randomness is not their own");
        }
    }

    /**
     * STATUS until the worker's clock is within {@link #CLOCK_SETTLED} of the host's, for at most
     * {@link #CLOCK_WAIT}. The init sets the guest kernel's clock at once, but gVisor's sentry
     * keeps its own calibrated clock, updated about once a second; it notices the jump (and falls
     * back to the guest's clock) at its next update, which after a restore under TCG came 1–2 s
     * later. The last status is returned either way; {@link #checkStatus} judges it.
     */
    private static WorkerStatus awaitClock(SandboxTransport transport, long deadline) throws InterruptedException,
            java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException {
        long until = System.nanoTime() + CLOCK_WAIT.toNanos();
        while (true) {
            WorkerStatus st = QemuSandbox.status(transport, min(remaining(deadline), Duration.ofSeconds(20)));
            long skew = Math.abs(st.wallClockMillis() - System.currentTimeMillis());
            if (skew <= CLOCK_SETTLED.toMillis() || System.nanoTime() > until) {
                return st;
            }
            Thread.sleep(100);
        }
    }

    static final Duration CLOCK_SETTLED = Duration.ofMillis(500);
    static final Duration CLOCK_WAIT = Duration.ofSeconds(5);

    /** A restored worker whose clock is further off than this from the host's is refused. */
    static final Duration MAX_CLOCK_SKEW = Duration.ofSeconds(2);

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private final Map<Arch, ImageSeen> images = new ConcurrentHashMap<>();

    /** A verified image and what its files looked like then. */
    private record ImageSeen(GuestImage image, Map<String, String> stamps) {
    }

    /**
     * The guest image, verified (every SHA-256, some 0.2 s for its 60 MB) the first time and again
     * whenever a file's size, mtime or inode changed since — not on every start, which for a clone
     * would cost more than the restore itself.
     */
    private GuestImage image(Arch guest) {
        ImageSeen seen = images.get(guest);
        if (seen != null && seen.stamps().equals(stamps(seen.image()))) {
            return seen.image();
        }
        GuestImage image = GuestImage.load(imageRoot, guest);
        images.put(guest, new ImageSeen(image, stamps(image)));
        return image;
    }

    private static Map<String, String> stamps(GuestImage image) {
        Map<String, String> out = new java.util.TreeMap<>();
        for (String f : image.sha256().keySet()) {
            Path p = image.dir().resolve(f);
            try {
                Object ino = java.nio.file.Files.getFileStore(p).supportsFileAttributeView("unix")
                        ? java.nio.file.Files.getAttribute(p, "unix:ino") : "";
                out.put(f, java.nio.file.Files.size(p) + "|" + java.nio.file.Files.getLastModifiedTime(p) + "|" + ino);
            } catch (IOException e) {
                out.put(f, "missing");
            }
        }
        return out;
    }

    // ---- one VM: launch, handshake, failure -------------------------------------------------

    private Sandbox attempt(SandboxConfig config, long deadline, List<String> earlierAttempts) {
        Launch l = launch(config, VmRole.cold(), deadline);
        try {
            handshake(l, deadline);
            QemuSandbox sandbox = l.toSandbox(l.report(earlierAttempts, Optional.empty()));
            progress.accept("sandbox " + l.id + ": ready in " + sandbox.bootReport().total().toMillis() + " ms");
            running.add(sandbox);
            return sandbox;
        } catch (RuntimeException | IOException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw l.fail(e, l.stalled);
        }
    }

    /** HELLO/READY of a booting guest, with the stall watch of {@link #GUEST_STALL}. */
    private void handshake(Launch l, long deadline) throws IOException, InterruptedException {
        progress.accept("sandbox " + l.id + ": waiting for the worker (guest boot + gVisor + JVM)");
        try (StallWatch stall = new StallWatch(l.console, l.transport)) {
            try {
                l.ready = l.transport.handshake(Hello.fresh(limits(l.config)), remaining(deadline));
            } catch (IOException | RuntimeException e) {
                l.stalled = stall.fired();
                throw e;
            }
        }
        l.phases.put("worker-ready", since(l.startNanos));
        l.console.poll();
        l.console.guestPhases().forEach((name, uptime) -> l.phases.put("guest:" + name, uptime));
    }

    /**
     * Starts QEMU for {@code role} and connects everything the host holds: the worker's port
     * first (the guest init opens it a few seconds into the boot, and a port whose host end is
     * not connected reads as end of input, which ends the worker), the init's control port, QMP.
     * On failure everything created is released and a typed exception thrown.
     */
    private Launch launch(SandboxConfig config, VmRole role, long deadline) {
        HostInfo h = host();
        Arch guest = h.arch();
        QemuInstallation qemuInstall = h.requireQemu(guest);
        GuestImage image = image(guest);
        AcceleratorChoice accel = choose(config, h, image);
        Launch l = new Launch(config, accel);
        try {
            GuestTransport guestTransport = role instanceof VmRole.Cold
                    ? chooseTransport(config, image, l.sockets, l.extras) : new GuestTransport.Serial(l.sockets.worker());
            l.sockets.createDirectories();
            l.state = states.create(l.id, qemuInstall.binary().toString(), l.sockets);
            QemuCommandInput input = QemuCommandInput.builder()
                    .host(h.os(), h.arch()).guestArch(guest).accelerator(accel.accelerator())
                    .qemu(qemuInstall.binary(), qemuInstall.version()).config(config)
                    .image(image.kernel(), image.initrd())
                    .qmpSocket(l.sockets.qmp()).consoleLog(l.state.consoleLog()).pidFile(l.state.pidFile())
                    .controlSocket(l.sockets.control()).transport(guestTransport).role(role).build();
            List<String> argv = QemuCommand.build(input);
            l.profile = MachineProfile.select(h.os(), h.arch(), guest, accel.accelerator(), qemuInstall.version(),
                    !(role instanceof VmRole.Cold));
            String what = role instanceof VmRole.Clone ? "restoring" : role instanceof VmRole.Template
                    ? "starting the template VM" : "starting QEMU";
            progress.accept("sandbox " + l.id + ": " + what + " (" + accel.accelerator().qemuName() + ", "
                    + l.profile.machine().split(",")[0] + ", " + config.vcpus() + " vCPU, " + config.memoryMib()
                    + " MiB)");
            l.startNanos = System.nanoTime();
            l.qemu = QemuProcess.launcher(argv).stdout(l.state.stdoutLog()).stderr(l.state.stderrLog())
                    .console(l.state.consoleLog()).start();
            l.state.recordQemu(l.qemu.handle());
            String id = l.id;
            l.console = new ConsoleWatcher(l.state.consoleLog(), l.startNanos, line -> progress.accept("sandbox " + id
                    + ": " + line));
            l.phases.put("process-start", Duration.ZERO);
            QemuProcess q = l.qemu;
            l.transport = connectTransport(guestTransport, limits(config), remaining(deadline), q);
            l.phases.put("transport-connected", since(l.startNanos));
            l.control = GuestControl.connect(l.sockets.control(), remaining(deadline), q::isAlive);
            l.extras.add(l.control);
            l.qmp = QmpClient.builder(l.sockets.qmp()).connectTimeout(remaining(deadline)).processAlive(q::isAlive)
                    .eventListener(e -> onEvent(id, e)).connect();
            l.phases.put("qmp-ready", since(l.startNanos));
            return l;
        } catch (RuntimeException | IOException | InterruptedException | QemuProcessException
                | io.qvm.backend.qmp.QmpException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw l.fail(e, false);
        }
    }

    /** What one VM being started holds, released together when the start fails. */
    private final class Launch {
        final String id = StateDirectory.newSandboxId();
        final SocketPaths sockets = SocketPaths.forSandbox(runtimeRoot, id);
        final SandboxConfig config;
        final AcceleratorChoice accel;
        final List<AutoCloseable> extras = new ArrayList<>();
        final Map<String, Duration> phases = new LinkedHashMap<>();
        long startNanos = System.nanoTime();
        MachineProfile profile;
        SandboxState state;
        QemuProcess qemu;
        QmpClient qmp;
        SandboxTransport transport;
        ConsoleWatcher console;
        GuestControl control;
        Ready ready;
        boolean stalled;

        Launch(SandboxConfig config, AcceleratorChoice accel) {
            this.config = config;
            this.accel = accel;
        }

        BootReport report(List<String> earlier, Optional<String> template) {
            List<String> notes = new ArrayList<>(earlier);
            accel.warning().ifPresent(notes::add);
            notes.add("worker " + ready.version() + " capabilities " + ready.capabilities());
            if (transport.discardedBytes() > 0 || transport.discardedFrames() > 0) {
                notes.add("handshake discarded " + transport.discardedBytes() + " stale bytes and "
                        + transport.discardedFrames() + " frames");
            }
            return new BootReport(accel.accelerator().qemuName(), profile.machine().split(",")[0], transport.kind(),
                    phases, notes, template);
        }

        QemuSandbox toSandbox(BootReport report) {
            return new QemuSandbox(new QemuSandbox.Parts(id, config, report, qemu, qmp, transport, state, sockets,
                    console, extras), running::remove);
        }

        /** Releases everything and returns the typed failure (a host problem as it was, else BootFailed). */
        SandboxException fail(Exception e, boolean stalled) {
            SandboxException failure = bootFailure(id, e, qemu, qmp, transport, console, state, sockets, extras,
                    config, stalled);
            return failure instanceof BootFailedException b ? b.guestStalled(stalled) : failure;
        }
    }

    private SandboxException bootFailure(String id, Exception e, QemuProcess qemu, QmpClient qmp,
            SandboxTransport transport, ConsoleWatcher console, SandboxState state, SocketPaths sockets,
            List<AutoCloseable> extras, SandboxConfig config, boolean stalled) {
        String consoleTail = "";
        String stderrTail = "";
        String exited = qemu == null ? null : qemu.exitInfo().map(x -> "QEMU " + x.describe()).orElse(null);
        for (AutoCloseable c : new AutoCloseable[] {transport, qmp, console}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception ignored) {
                // best effort: the boot already failed
            }
        }
        if (qemu != null) {
            qemu.stop(io.qvm.backend.process.StopLadder.signalsOnly());
            qemu.close();
            // Taken once QEMU is gone, so the tails hold everything it wrote.
            consoleTail = qemu.consoleTail(QemuProcess.TAIL_BYTES);
            stderrTail = qemu.stderrTail(QemuProcess.TAIL_BYTES);
        }
        // The console is complete now that QEMU is gone: read the init's verdict from it.
        if (console != null) {
            console.poll();
        }
        String initError = console == null ? null : console.error().orElse(null);
        Integer workerExit = console == null ? null : console.workerExitStatus().orElse(null);
        for (AutoCloseable c : extras) {
            try {
                c.close();
            } catch (Exception ignored) {
                // best effort
            }
        }
        try {
            if (state != null) {
                state.delete();
            }
            sockets.deleteDirectory();
        } catch (IOException ignored) {
            // best effort; the reaper removes what is left
        }
        if (e instanceof SandboxException se && qemu == null) {
            return se; // a host problem before QEMU ran (no QEMU, image, accelerator, transport): already typed
        }
        StringBuilder why = new StringBuilder("sandbox " + id + " did not become ready: ");
        if (stalled) {
            why.append("the guest stalled: no console output for ").append(GUEST_STALL.toSeconds())
                    .append(" s before the init ran runsc (a TCG guest occasionally hangs early in its boot)");
        } else if (initError != null) {
            why.append("the guest init failed: ").append(initError);
        } else if ((e instanceof TransportException t && t.reason() != TransportException.Reason.CLOSED
                || e instanceof io.qvm.backend.qmp.QmpConnectException) && exited == null) {
            why.append("no answer within the boot deadline of ").append(config.bootTimeout().toSeconds())
                    .append(" s (").append(e.getMessage()).append(")");
        } else {
            why.append(e.getMessage());
        }
        if (workerExit != null) {
            why.append("; the worker exited with status ").append(workerExit).append(" before READY");
        }
        if (exited != null) {
            why.append("; ").append(exited);
        }
        return new BootFailedException(why.toString(), e, consoleTail, stderrTail, workerExit);
    }

    private GuestTransport chooseTransport(SandboxConfig config, GuestImage image, SocketPaths sockets,
            List<AutoCloseable> extras) throws IOException {
        TransportPreference pref = config.transport();
        VsockSupport.Verdict vsock = pref == TransportPreference.SERIAL ? null : VsockSupport.probe();
        boolean imageVsock = image.transports().contains("vsock");
        if (pref == TransportPreference.VSOCK) {
            if (!vsock.usable()) {
                throw new HostSetupException(HostSetupException.Problem.TRANSPORT_UNAVAILABLE, "vsock was requested but is not usable on this host: "
                        + vsock.reason() + ". Use TransportPreference.SERIAL (works everywhere) or AUTO.");
            }
            if (!imageVsock) {
                throw new HostSetupException(HostSetupException.Problem.TRANSPORT_UNAVAILABLE, "vsock was requested but the guest image at " + image.dir()
                        + " supports only " + image.transports() + ". Use TransportPreference.SERIAL or AUTO.");
            }
        }
        if (pref != TransportPreference.SERIAL && vsock.usable() && imageVsock) {
            GuestCidAllocator.GuestCid cid = GuestCidAllocator.defaults().allocate();
            extras.add(cid);
            return new GuestTransport.Vsock(cid.cid(), GuestTransport.DEFAULT_VSOCK_PORT);
        }
        return new GuestTransport.Serial(sockets.worker());
    }

    private static SandboxTransport connectTransport(GuestTransport t, Limits limits, Duration deadline,
            QemuProcess qemu) throws TransportException, InterruptedException {
        if (t instanceof GuestTransport.Vsock v) {
            return VsockTransport.connect((int) v.guestCid(), v.port(), limits, deadline, qemu::isAlive);
        }
        return SerialTransport.connect(((GuestTransport.Serial) t).socket(), limits, deadline, qemu::isAlive);
    }

    /** The limits the worker gets in HELLO, all from the config. */
    public static Limits limits(SandboxConfig c) {
        return new Limits((int) c.maxRequestBytes(), (int) c.maxResponseBytes(), c.maxPixels(), c.maxSide(),
                c.maxPages(), c.requestTimeout().toMillis());
    }

    private void onEvent(String id, QmpEvent e) {
        if (e.is(QmpEvent.GUEST_PANICKED)) {
            LOG.log(System.Logger.Level.WARNING, "sandbox " + id + ": guest kernel panicked");
        } else if (e.is(QmpEvent.SHUTDOWN)) {
            LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + ": SHUTDOWN " + e.data());
        }
    }

    private static Duration remaining(long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw new BootFailedException("the boot deadline passed");
        }
        return Duration.ofNanos(left);
    }

    private static Duration since(long startNanos) {
        return Duration.ofNanos(System.nanoTime() - startNanos);
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

    /**
     * Watches a booting guest's console: if it stays silent for {@link #GUEST_STALL} before the
     * init reaches {@code runsc}, it closes the transport, which ends the pending handshake at once.
     */
    private static final class StallWatch implements AutoCloseable {
        private final java.util.concurrent.ScheduledExecutorService timer;
        private volatile boolean fired;

        StallWatch(ConsoleWatcher console, SandboxTransport transport) {
            timer = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "qvm-boot-stall-watch");
                t.setDaemon(true);
                return t;
            });
            timer.scheduleWithFixedDelay(() -> {
                console.poll();
                if (!console.reached("runsc") && console.silentFor().compareTo(GUEST_STALL) > 0) {
                    fired = true;
                    transport.close();
                    timer.shutdown();
                }
            }, 1, 1, java.util.concurrent.TimeUnit.SECONDS);
        }

        boolean fired() {
            return fired;
        }

        @Override
        public void close() {
            timer.shutdownNow();
        }
    }

    /** Builder for {@link QemuVmBackend}; every default lives here. */
    public static final class Builder {
        private Path imageRoot;
        private Path stateRoot;
        private Path runtimeRoot;
        private Consumer<String> progress = line -> { };
        private boolean reapOnStart = true;
        private boolean useProbeCache = true;
        private HostProbe hostProbe;
        private Path templateRoot;
        private Boolean useTemplates;

        private Builder() {
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

        /** Where templates are kept (default {@code $QVM_CACHE/templates} or {@code ~/.cache/qvm/templates}). */
        public Builder templateDirectory(Path root) {
            this.templateRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /** The directory holding one image directory per architecture (default {@link GuestImage#defaultRoot()}). */
        public Builder imageDir(Path root) {
            this.imageRoot = Objects.requireNonNull(root, "root");
            return this;
        }

        /** The state directory (default {@code $QVM_STATE} or {@code ~/.local/state/qvm}). */
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
        public Builder hostProbe(HostProbe probe) {
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
