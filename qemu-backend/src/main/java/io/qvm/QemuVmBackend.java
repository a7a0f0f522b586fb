package io.qvm;

import io.qvm.backend.image.GuestImage;
import io.qvm.backend.probe.AcceleratorChoice;
import io.qvm.backend.probe.AcceleratorSelector;
import io.qvm.backend.probe.Arch;
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
import io.qvm.backend.qmp.QmpClient;
import io.qvm.backend.qmp.QmpEvent;
import io.qvm.backend.sandbox.ConsoleWatcher;
import io.qvm.backend.sandbox.QemuSandbox;
import io.qvm.transport.Hello;
import io.qvm.transport.Limits;
import io.qvm.transport.Ready;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import io.qvm.transport.netty.SerialTransport;
import io.qvm.transport.netty.VsockTransport;
import io.qvm.transport.vsock.GuestCidAllocator;
import io.qvm.transport.vsock.VsockSupport;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
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
    private final boolean useProbeCache;
    private final Set<QemuSandbox> running = ConcurrentHashMap.newKeySet();
    private final Map<String, AcceleratorChoice> choices = new ConcurrentHashMap<>();
    private final ReapReport startupReap;
    private volatile HostInfo host;
    private volatile boolean closed;

    private QemuVmBackend(Builder b) {
        this.imageRoot = b.imageRoot != null ? b.imageRoot : GuestImage.defaultRoot();
        this.states = b.stateRoot != null ? StateDirectory.at(b.stateRoot) : StateDirectory.defaultLocation();
        this.runtimeRoot = b.runtimeRoot != null ? b.runtimeRoot : SocketPaths.defaultRuntimeRoot();
        this.progress = b.progress;
        this.useProbeCache = b.useProbeCache;
        this.startupReap = b.reapOnStart ? reap() : null;
    }

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
                    host = HostProbe.system().probe();
                }
                h = host;
            }
        }
        return h;
    }

    /** The accelerator a sandbox with {@code config} would run on (the probe's verdict is cached). */
    public AcceleratorChoice acceleratorChoice(SandboxConfig config) {
        HostInfo h = host();
        GuestImage image = GuestImage.load(imageRoot, h.arch());
        return choose(config, h, image);
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
        for (int attempt = 1; ; attempt++) {
            try {
                return attempt(config, deadline, earlier);
            } catch (BootFailedException e) {
                boolean workerDied = e.workerExitStatus().map(s -> s != 0).orElse(false);
                if (!(workerDied || e.guestStalled()) || attempt >= BOOT_ATTEMPTS || System.nanoTime() >= deadline) {
                    throw e;
                }
                String note = "boot attempt " + attempt + " failed: " + (workerDied ? "the worker exited with status "
                        + e.workerExitStatus().get() + " before READY" : "the guest stalled before the init ran runsc")
                        + "; retried in a fresh VM";
                progress.accept(note);
                LOG.log(System.Logger.Level.WARNING, note + "\n" + e.getMessage());
                earlier.add(note);
            }
        }
    }

    private Sandbox attempt(SandboxConfig config, long deadline, List<String> earlierAttempts) {
        long startNanos = System.nanoTime();
        HostInfo h = host();
        Arch guest = h.arch();
        QemuInstallation qemuInstall = h.requireQemu(guest);
        GuestImage image = GuestImage.load(imageRoot, guest);
        AcceleratorChoice accel = choose(config, h, image);
        Limits limits = limits(config);

        List<AutoCloseable> extras = new ArrayList<>();
        boolean stalled = false;
        String id = StateDirectory.newSandboxId();
        SocketPaths sockets = SocketPaths.forSandbox(runtimeRoot, id);
        SandboxState state = null;
        QemuProcess qemu = null;
        QmpClient qmp = null;
        SandboxTransport transport = null;
        ConsoleWatcher console = null;
        try {
            GuestTransport guestTransport = chooseTransport(config, image, sockets, extras);
            sockets.createDirectories();
            state = states.create(id, qemuInstall.binary().toString(), sockets);
            QemuCommandInput input = QemuCommandInput.builder()
                    .host(h.os(), h.arch()).guestArch(guest).accelerator(accel.accelerator())
                    .qemu(qemuInstall.binary(), qemuInstall.version()).config(config)
                    .image(image.kernel(), image.initrd())
                    .qmpSocket(sockets.qmp()).consoleLog(state.consoleLog()).pidFile(state.pidFile())
                    .transport(guestTransport).build();
            List<String> argv = QemuCommand.build(input);
            MachineProfile profile = MachineProfile.select(h.os(), h.arch(), guest, accel.accelerator(),
                    qemuInstall.version());
            progress.accept("sandbox " + id + ": starting QEMU (" + accel.accelerator().qemuName() + ", "
                    + profile.machine().split(",")[0] + ", " + config.vcpus() + " vCPU, " + config.memoryMib()
                    + " MiB)");
            qemu = QemuProcess.launcher(argv).stdout(state.stdoutLog()).stderr(state.stderrLog())
                    .console(state.consoleLog()).start();
            state.recordQemu(qemu.handle());
            console = new ConsoleWatcher(state.consoleLog(), startNanos, line -> progress.accept("sandbox " + id
                    + ": " + line));

            Map<String, Duration> phases = new LinkedHashMap<>();
            phases.put("process-start", Duration.ZERO);
            QemuProcess q = qemu;
            // The worker's port first: the guest init opens it a few seconds into the boot, and a
            // port whose host end is not connected reads as end of input, which ends the worker.
            transport = connectTransport(guestTransport, limits, remaining(deadline), q);
            phases.put("transport-connected", since(startNanos));
            qmp = QmpClient.builder(sockets.qmp()).connectTimeout(remaining(deadline)).processAlive(q::isAlive)
                    .eventListener(e -> onEvent(id, e)).connect();
            phases.put("qmp-ready", since(startNanos));
            progress.accept("sandbox " + id + ": waiting for the worker (guest boot + gVisor + JVM)");
            Ready ready;
            try (StallWatch stall = new StallWatch(console, transport)) {
                try {
                    ready = transport.handshake(Hello.fresh(limits), remaining(deadline));
                } catch (IOException | RuntimeException e) {
                    stalled = stall.fired();
                    throw e;
                }
            }
            phases.put("worker-ready", since(startNanos));
            console.poll();
            console.guestPhases().forEach((name, uptime) -> phases.put("guest:" + name, uptime));

            List<String> notes = new ArrayList<>(earlierAttempts);
            accel.warning().ifPresent(notes::add);
            notes.add("worker " + ready.version() + " capabilities " + ready.capabilities());
            if (transport.discardedBytes() > 0 || transport.discardedFrames() > 0) {
                notes.add("handshake discarded " + transport.discardedBytes() + " stale bytes and "
                        + transport.discardedFrames() + " frames");
            }
            BootReport report = new BootReport(accel.accelerator().qemuName(), profile.machine().split(",")[0],
                    transport.kind(), phases, notes);
            progress.accept("sandbox " + id + ": ready in " + report.total().toMillis() + " ms");
            QemuSandbox sandbox = new QemuSandbox(new QemuSandbox.Parts(id, config, report, qemu, qmp, transport,
                    state, sockets, console, extras), running::remove);
            running.add(sandbox);
            return sandbox;
        } catch (RuntimeException | IOException | InterruptedException | QemuProcessException | io.qvm.backend.qmp.QmpException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            SandboxException failure = bootFailure(id, e, qemu, qmp, transport, console, state, sockets, extras,
                    config, stalled);
            throw failure instanceof BootFailedException b ? b.guestStalled(stalled) : failure;
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
        } else if (e instanceof io.qvm.transport.HandshakeTimeoutException
                || e instanceof io.qvm.backend.qmp.QmpConnectException && exited == null) {
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
                throw new TransportUnavailableException("vsock was requested but is not usable on this host: "
                        + vsock.reason() + ". Use TransportPreference.SERIAL (works everywhere) or AUTO.");
            }
            if (!imageVsock) {
                throw new TransportUnavailableException("vsock was requested but the guest image at " + image.dir()
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

        private Builder() {
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
