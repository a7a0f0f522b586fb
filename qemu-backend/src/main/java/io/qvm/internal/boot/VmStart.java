package io.qvm.internal.boot;

import io.qvm.BootFailedException;
import io.qvm.BootReport;
import io.qvm.HostSetupException;
import io.qvm.SandboxConfig;
import io.qvm.SandboxException;
import io.qvm.TransportPreference;
import io.qvm.internal.image.ClassArchives;
import io.qvm.internal.image.GuestImage;
import io.qvm.internal.probe.AcceleratorChoice;
import io.qvm.internal.process.CgroupTree;
import io.qvm.internal.process.QemuProcess;
import io.qvm.internal.process.QemuProcessException;
import io.qvm.internal.process.QemuUser;
import io.qvm.internal.process.SandboxState;
import io.qvm.internal.process.SocketPaths;
import io.qvm.internal.process.StateDirectory;
import io.qvm.internal.process.StopLadder;
import io.qvm.internal.qemu.GuestTransport;
import io.qvm.internal.qemu.MachineProfile;
import io.qvm.internal.qemu.QemuCommand;
import io.qvm.internal.qemu.QemuCommandInput;
import io.qvm.internal.qemu.VmRole;
import io.qvm.internal.qmp.QmpClient;
import io.qvm.internal.qmp.QmpConnectException;
import io.qvm.internal.qmp.QmpEvent;
import io.qvm.internal.qmp.QmpException;
import io.qvm.internal.sandbox.GuestWatcher;
import io.qvm.internal.sandbox.GuestControl;
import io.qvm.internal.sandbox.QemuSandbox;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import io.qvm.protocol.image.InitEvents;
import io.qvm.protocol.image.KernelCommandLine;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import io.qvm.transport.netty.NettyIo;
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
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One VM being started, in the steps of its readiness, each a method with the boot deadline:
 *
 * <ol>
 * <li>{@link #launch}: the argv built from the inputs, the sandbox recorded in the state
 *     directory, QEMU started ({@code process-start}), then everything the host holds connected —
 *     the worker's port first ({@code transport-connected}: the guest init opens it a few seconds
 *     into the boot, and a port whose host end is not connected reads as end of input, which
 *     would end the worker), the init's control port, QMP ({@code qmp-ready}, after its greeting);
 * <li>{@link #awaitWorker}: HELLO/READY of a booting guest ({@code worker-ready}), with a watch
 *     that stops a guest whose console stays silent for {@link #GUEST_STALL} before the init ran
 *     {@code runsc}; a clone's steps are {@link CloneRestore}'s;
 * <li>{@link #toSandbox}: the parts handed to a {@link QemuSandbox}.
 * </ol>
 *
 * A failure at any step goes through {@link #fail}: QEMU is stopped, every socket, file and
 * allocation the start made is released, and the failure comes back typed — a host problem found
 * before QEMU ran as it was, anything later as a {@link BootFailedException} with the console and
 * stderr tails, the init's error and the worker's exit status when the guest reported them.
 */
public final class VmStart {

    private static final System.Logger LOG = System.getLogger(VmStart.class.getName());

    /**
     * A guest whose console stays silent this long before the init reaches {@code runsc} is
     * stuck: under TCG a kernel occasionally stops making progress early in its boot (seen here
     * once at PCI enumeration on q35, and at clock calibration on microvm — adr/0001). Such a boot
     * is stopped and, like a worker that died, tried once more in a fresh VM. A kernel boot prints
     * continuously: in the boot consoles read here the longest quiet stretch was the initramfs
     * unpacking, a few seconds.
     */
    public static final Duration GUEST_STALL = Duration.ofSeconds(90);

    /**
     * What every start shares: where state and sockets go, who hears progress, who is told
     * when a sandbox closes, and how QEMU is confined beyond its argv: the unprivileged user it
     * drops to when this process is root ({@link QemuUser#dropTo()}), and the cgroup tree its
     * process goes into where the host has one ({@link CgroupTree}, prepared).
     */
    public record Context(StateDirectory states, Path runtimeRoot, Consumer<String> progress,
            Consumer<QemuSandbox> onClosed, Optional<QemuUser.Account> runAs, Optional<CgroupTree> cgroups,
            ClassArchives archives, QemuSandbox.PauseCheck pauseCheck) {
        public Context {
            java.util.Objects.requireNonNull(pauseCheck, "pauseCheck");
            java.util.Objects.requireNonNull(runAs, "runAs");
            java.util.Objects.requireNonNull(cgroups, "cgroups");
            java.util.Objects.requireNonNull(archives, "archives");
        }
    }

    /** Where QEMU writes the class archive a boot makes, in the sandbox's state directory. */
    static final String CLASS_ARCHIVE_FILE = "class-archive.jsa";

    private final Context ctx;
    private final StartPlan target;
    private final SandboxConfig config;
    private final List<AutoCloseable> extras = new ArrayList<>();
    private final Map<String, Duration> phases = new LinkedHashMap<>();
    private final String id = StateDirectory.newSandboxId();
    private final SocketPaths sockets;
    private long startNanos = System.nanoTime();
    private MachineProfile profile;
    private SandboxState state;
    private QemuProcess qemu;
    private QmpClient qmp;
    private SandboxTransport transport;
    private GuestWatcher console;
    private GuestControl control;
    private Ready ready;
    private boolean stalled;
    /** What this boot does about the worker's class archive (adr/0018); a clone does nothing. */
    private ClassArchives.Plan archive = new ClassArchives.Plan.None("a clone boots nothing");
    private Optional<Path> archiveOut = Optional.empty();
    private String archiveNote;

    private VmStart(Context ctx, StartPlan target) {
        this.ctx = ctx;
        this.target = target;
        this.config = target.config();
        this.sockets = SocketPaths.forSandbox(ctx.runtimeRoot(), id);
    }

    /**
     * Starts QEMU for {@code role} and connects the worker's port, the control port and QMP.
     *
     * @throws SandboxException typed as {@link #fail} says, with everything released
     */
    public static VmStart launch(Context ctx, StartPlan plan, VmRole role, long deadline) {
        return launch(ctx, plan, role, Optional.empty(), deadline);
    }

    /**
     * As {@link #launch(Context, StartPlan, VmRole, long)}, with {@code incoming} (a
     * clone's migration stream, the template's state file) on QEMU's stdin for
     * {@link io.qvm.internal.template.MigrationStream#restore}.
     */
    public static VmStart launch(Context ctx, StartPlan plan, VmRole role, Optional<Path> incoming, long deadline) {
        VmStart v = new VmStart(ctx, plan);
        try {
            GuestTransport guestTransport = role instanceof VmRole.Cold ? v.chooseTransport()
                    : new GuestTransport.Serial(v.sockets.worker());
            v.startProcess(role, guestTransport, incoming);
            v.connectTransport(guestTransport, deadline);
            v.connectControl(deadline);
            v.connectQmp(deadline);
            return v;
        } catch (RuntimeException | IOException | InterruptedException | QemuProcessException | QmpException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw v.fail(e);
        }
    }

    /** Step: record the sandbox, build the argv, start QEMU and follow its console. */
    private void startProcess(VmRole role, GuestTransport guestTransport, Optional<Path> incoming)
            throws IOException, QemuProcessException {
        AcceleratorChoice accel = target.accel();
        sockets.createDirectories();
        state = ctx.states().create(id, target.qemu().binary().toString(), sockets);
        if (!(role instanceof VmRole.Clone)) {
            archive = ctx.archives().plan(target.image());
        }
        Path initrd = target.image().initrd();
        if (archive instanceof ClassArchives.Plan.Use use) {
            initrd = use.initrd();
            archiveNote = "class archive: in use";
        } else if (archive instanceof ClassArchives.Plan.Make) {
            archiveOut = Optional.of(state.dir().resolve(CLASS_ARCHIVE_FILE));
            say("this image's first boot here: the guest makes the worker's class archive before starting it"
                    + " (once per image; later boots start faster)");
        } else if (!(role instanceof VmRole.Clone)) {
            archiveNote = "class archive: none (" + ((ClassArchives.Plan.None) archive).why() + ")";
        }
        QemuCommandInput input = target.input()
                .image(target.image().kernel(), initrd).classArchiveOut(archiveOut)
                .guestReseed(target.image().manifest().crngReseed())
                .qmpSocket(sockets.qmp()).consoleLog(state.consoleLog()).eventsLog(state.eventsLog()).pidFile(state.pidFile())
                .controlSocket(sockets.control()).transport(guestTransport).role(role)
                .runAs(ctx.runAs().map(QemuUser.Account::name)).build();
        List<String> argv = QemuCommand.build(input);
        profile = target.profile(role);
        String what = role instanceof VmRole.Clone ? "restoring" : role instanceof VmRole.Template
                ? "starting the template VM" : "starting QEMU";
        say(what + " (" + accel.accelerator().qemuName() + ", " + machine() + ", " + config.vcpus() + " vCPU, "
                + config.memoryMib() + " MiB)");
        startNanos = System.nanoTime();
        QemuProcess.Launcher launcher = QemuProcess.launcher(argv).stdout(state.stdoutLog())
                .stderr(state.stderrLog()).console(state.consoleLog());
        incoming.ifPresent(launcher::stdin);
        CgroupTree.Cgroup cgroup = null;
        if (ctx.cgroups().isPresent()) {
            cgroup = ctx.cgroups().get().create(id, CgroupTree.memoryMaxBytes(config,
                    accel.accelerator() == io.qvm.Accelerator.TCG, MachineProfile.TCG_TB_MIB), CgroupTree.tasksMax(config),
                    Optional.of(CgroupTree.cpuMax(config)));
            extras.add(cgroup); // closed after QEMU is gone: then it is empty and can be removed
        }
        qemu = launcher.start();
        if (cgroup != null) {
            cgroup.add(qemu.pid());
        }
        state.recordQemu(qemu.handle());
        QemuProcess started = qemu;
        // Watches both files' caps from here until the sandbox is closed (QemuSandbox closes it):
        // past either, QEMU is killed at once, whatever the host is doing.
        console = new GuestWatcher(state.eventsLog(), state.consoleLog(), InitEvents.CONSOLE_MAX_BYTES,
                () -> started.handle().destroyForcibly(), startNanos, line -> say(line));
        // The port stays behind the file while this VM runs: capped like the console, for its whole life.
        archiveOut.ifPresent(f -> console.capArchive(f, ctx.archives().maxBytes()));
        phases.put("process-start", Duration.ZERO);
    }

    /** Step: connect to the worker's port (QEMU listens on it from its start). */
    private void connectTransport(GuestTransport t, long deadline) throws TransportException, InterruptedException {
        Limits limits = target.limits();
        Duration left = Deadlines.remaining(deadline);
        Duration stall = target.config().frameStallTimeout();
        transport = t instanceof GuestTransport.Vsock v
                ? VsockTransport.connect((int) v.guestCid(), v.port(), limits, left, qemu::isAlive, stall)
                : SerialTransport.connect(((GuestTransport.Serial) t).socket(), limits, left, qemu::isAlive,
                        NettyIo.best(), stall);
        phases.put("transport-connected", Deadlines.since(startNanos));
    }

    /** Step: connect to the init's control port. */
    private void connectControl(long deadline) throws IOException, InterruptedException {
        control = GuestControl.connect(sockets.control(), Deadlines.remaining(deadline), qemu::isAlive);
        extras.add(control);
    }

    /** Step: connect QMP and complete its greeting and capabilities negotiation. */
    private void connectQmp(long deadline) throws QmpException, InterruptedException {
        String sandbox = id;
        qmp = QmpClient.builder(sockets.qmp()).connectTimeout(Deadlines.remaining(deadline))
                .processAlive(qemu::isAlive).eventListener(e -> onEvent(sandbox, e)).connect();
        phases.put("qmp-ready", Deadlines.since(startNanos));
    }

    /**
     * Step for a booting guest: HELLO/READY, with the stall watch of {@link #GUEST_STALL}. The
     * guest's own phases (from the console) join the report.
     *
     * @throws SandboxException typed as {@link #fail} says, with everything released
     */
    public void awaitWorker(long deadline) {
        say("waiting for the worker (guest boot + gVisor + JVM)");
        try {
            try (StallWatch stall = new StallWatch(console, transport)) {
                try {
                    ready = transport.handshake(Hello.fresh(target.limits()), Deadlines.remaining(deadline));
                } catch (IOException | RuntimeException e) {
                    stalled = stall.fired();
                    throw e;
                }
            }
            phases.put("worker-ready", Deadlines.since(startNanos));
            console.poll();
            console.guestPhases().forEach((name, uptime) -> phases.put("guest:" + name, uptime));
            if (archive instanceof ClassArchives.Plan.Use) {
                ctx.archives().cleared(target.image());
            }
            keepArchive();
        } catch (RuntimeException | IOException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw fail(e);
        }
    }

    /**
     * After READY of a boot that made the class archive: keeps it for the image's later boots, or
     * records why there is none. Never fails the boot: the archive only makes later boots faster.
     */
    private void keepArchive() {
        if (!(archive instanceof ClassArchives.Plan.Make claim)) {
            return;
        }
        archive = new ClassArchives.Plan.None("kept");
        Optional<Long> bytes = console.archiveBytes();
        if (bytes.isEmpty()) {
            String why = console.reached(InitEvents.Phase.ARCHIVE_FAILED)
                    ? "the guest could not make it (its console says why)"
                    : "the guest reported no class archive";
            ctx.archives().failed(claim, why);
            archiveNote = "class archive: not made: " + why;
            say(archiveNote);
            return;
        }
        Path out = archiveOut.orElseThrow();
        try {
            // The port's data and the init's event travel on different queues: give the file a
            // moment to be complete.
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (size(out) < bytes.get() && System.nanoTime() < until) {
                Thread.sleep(50);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ctx.archives().released(claim);
            return;
        }
        try {
            // install records a refusal itself; the file stays (capped) until the sandbox closes
            ctx.archives().install(target.image(), claim, out, bytes.get());
            archiveNote = "class archive: made in this boot (" + bytes.get() + " bytes) and kept for the image's next boots";
        } catch (IOException e) {
            archiveNote = "class archive: not kept: " + e.getMessage();
        }
        say(archiveNote);
    }

    /** {@code f}'s size, or -1 when it cannot be read. */
    private static long size(Path f) {
        try {
            return java.nio.file.Files.size(f);
        } catch (IOException e) {
            return -1;
        }
    }

    /** The boot report of a VM whose worker answered READY. */
    public BootReport report(List<String> earlier, Optional<String> template) {
        List<String> notes = new ArrayList<>(earlier);
        target.accel().warning().ifPresent(notes::add);
        if (archiveNote != null) {
            notes.add(archiveNote);
        }
        notes.add("worker " + ready.version() + " capabilities " + ready.capabilities());
        return new BootReport(target.accel().accelerator().qemuName(), machine(), transport.kind(), phases, notes,
                template);
    }

    /** Hands the parts to a sandbox (which from now on owns and releases them). */
    public QemuSandbox toSandbox(BootReport report) {
        return sandbox(report, config.idlePause());
    }

    /** The sandbox of a template VM: never paused for being idle, since it is saved (and paused) by {@link TemplateSave}. */
    QemuSandbox toTemplateVm(BootReport report) {
        return sandbox(report, java.time.Duration.ZERO);
    }

    private QemuSandbox sandbox(BootReport report, java.time.Duration idlePause) {
        return new QemuSandbox(new QemuSandbox.Parts(id, config, target.limits(), report, qemu, qmp, transport, state,
                sockets, console, control, idlePause, ctx.pauseCheck(), extras), ctx.onClosed());
    }

    public String id() {
        return id;
    }

    public SocketPaths sockets() {
        return sockets;
    }

    /**
     * Where this VM's QEMU hands over its migration stream when it is saved: the sandbox's private
     * runtime directory, or, when QEMU dropped to another user, a socket only that user can reach.
     */
    public io.qvm.internal.template.MigrationSocket migrationSocket() throws IOException {
        return ctx.runAs().isPresent() ? io.qvm.internal.template.MigrationSocket.reachableBy(ctx.runAs().get())
                : io.qvm.internal.template.MigrationSocket.inPrivateDirectory(sockets.migration());
    }

    public SandboxConfig config() {
        return config;
    }

    QmpClient qmp() {
        return qmp;
    }

    SandboxTransport transport() {
        return transport;
    }

    GuestControl control() {
        return control;
    }

    Map<String, Duration> phases() {
        return phases;
    }

    long startNanos() {
        return startNanos;
    }

    String machine() {
        return profile.machine().split(",")[0];
    }

    /** Whether the machine has a vmgenid device (its guest kernel reseeds by itself on a restore). */
    boolean vmgenid() {
        return profile.vmgenid();
    }

    void say(String line) {
        ctx.progress().accept("sandbox " + id + ": " + line);
    }

    /** The limits the worker gets in HELLO, all from the config. */
    public static Limits limits(SandboxConfig c) {
        return new Limits((int) c.maxRequestBytes(), (int) c.maxResponseBytes(), c.maxPixels(), c.maxSide(),
                c.maxPages(), c.requestTimeout().toMillis());
    }

    // ---- failure ------------------------------------------------------------------------------

    /**
     * Releases everything this start holds and returns the typed failure: a host problem found
     * before QEMU ran as it was, anything else a {@link BootFailedException} that says why, with
     * the evidence.
     */
    public SandboxException fail(Exception e) {
        String consoleTail = "";
        String stderrTail = "";
        String exited = qemu == null ? null : qemu.exitInfo().map(x -> "QEMU " + x.describe()).orElse(null);
        for (AutoCloseable c : new AutoCloseable[] {transport, qmp, console}) {
            closeQuietly(c);
        }
        if (qemu != null) {
            qemu.stop(StopLadder.signalsOnly());
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
        boolean archiveOverflow = archiveOut.isPresent() && oversized(archiveOut.get(), ctx.archives().maxBytes());
        boolean interrupted = e instanceof InterruptedException || Thread.currentThread().isInterrupted();
        if (archive instanceof ClassArchives.Plan.Use && workerExit != null && workerExit != 0
                && ctx.archives().suspected(target.image(), "status " + workerExit)) {
            say("the worker died before READY with the image's class archive again: set aside, the next boot makes a new one");
        }
        if (archive instanceof ClassArchives.Plan.Make claim) {
            if (archiveOverflow) {
                ctx.archives().failed(claim, "the guest wrote more than " + ctx.archives().maxBytes() + " bytes of it");
            } else if (!interrupted && console != null && console.reached(InitEvents.Phase.ARCHIVE_MAKE)
                    && !console.reached(InitEvents.Phase.ARCHIVE) && !console.reached(InitEvents.Phase.ARCHIVE_FAILED)) {
                // It failed while the guest made the archive: the next boot must not try it forever.
                ctx.archives().failed(claim, "the boot failed while the guest made it: " + e.getMessage());
            } else if (console != null && console.reached(InitEvents.Phase.ARCHIVE) && workerExit != null && workerExit != 0) {
                // The worker died mapping the archive its own boot made: not kept, and counted.
                ctx.archives().failed(claim, "the worker exited with status " + workerExit + " before READY, mapping it");
            } else {
                ctx.archives().released(claim); // the boot failed for another reason: the next one tries again
            }
        }
        extras.forEach(VmStart::closeQuietly);
        String jvmCrash = state == null ? "" : io.qvm.internal.sandbox.JvmCrashReport.clause(state.consoleLog());
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
        String overflow = console == null ? null : console.overflow().orElse(null);
        StringBuilder why = new StringBuilder("sandbox " + id + " did not become ready: ");
        if (overflow != null) {
            why.append(overflow).append(", so the VM was stopped: a guest that writes this much does not follow the")
                    .append(" contract (its init or kernel is not the image's), and booting it again would do the same");
        } else if (stalled) {
            why.append("the guest stalled: no console output for ").append(GUEST_STALL.toSeconds())
                    .append(" s before the init ran runsc (a TCG guest occasionally hangs early in its boot)");
        } else if (initError != null) {
            why.append("the guest init failed: ").append(initError);
        } else if ((e instanceof TransportException t && (t.reason() == TransportException.Reason.HANDSHAKE_TIMEOUT
                || t.reason() == TransportException.Reason.CONNECT_FAILED) || e instanceof QmpConnectException)
                && exited == null) {
            why.append("no answer within the boot deadline of ").append(config.bootTimeout().toSeconds())
                    .append(" s (").append(e.getMessage()).append(")");
        } else {
            why.append(e.getMessage());
        }
        if (workerExit != null) {
            why.append("; the worker exited with status ").append(workerExit).append(" before READY");
        }
        why.append(jvmCrash);
        if (exited != null) {
            why.append("; ").append(exited);
        }
        return new BootFailedException(why.toString(), e, consoleTail, stderrTail, workerExit).guestStalled(stalled);
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            if (c != null) {
                c.close();
            }
        } catch (Exception ignored) {
            // best effort: the boot already failed
        }
    }

    // ---- transport choice -----------------------------------------------------------------------

    private GuestTransport chooseTransport() throws IOException {
        TransportPreference pref = config.transport();
        GuestImage image = target.image();
        VsockSupport.Verdict vsock = pref == TransportPreference.SERIAL ? null : VsockSupport.probe();
        boolean imageVsock = image.transports().contains(KernelCommandLine.TRANSPORT_VSOCK);
        if (pref == TransportPreference.VSOCK) {
            if (!vsock.usable()) {
                throw new HostSetupException(HostSetupException.Problem.TRANSPORT_UNAVAILABLE, "vsock was requested "
                        + "but is not usable on this host: " + vsock.reason()
                        + ". Use TransportPreference.SERIAL (works everywhere) or AUTO.");
            }
            if (!imageVsock) {
                throw new HostSetupException(HostSetupException.Problem.TRANSPORT_UNAVAILABLE, "vsock was requested "
                        + "but the guest image at " + image.dir() + " supports only " + image.transports()
                        + ". Use TransportPreference.SERIAL or AUTO.");
            }
        }
        if (pref != TransportPreference.SERIAL && vsock.usable() && imageVsock) {
            GuestCidAllocator.GuestCid cid = GuestCidAllocator.defaults().allocate();
            extras.add(cid);
            return new GuestTransport.Vsock(cid.cid(), GuestTransport.DEFAULT_VSOCK_PORT);
        }
        return new GuestTransport.Serial(sockets.worker());
    }

    private static void onEvent(String id, QmpEvent e) {
        if (e.is(QmpEvent.GUEST_PANICKED)) {
            LOG.log(System.Logger.Level.WARNING, "sandbox " + id + ": guest kernel panicked");
        } else if (e.is(QmpEvent.SHUTDOWN)) {
            LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + ": SHUTDOWN " + e.data());
        }
    }

    /**
     * Watches a booting guest's console: if it stays silent for {@link #GUEST_STALL} before the
     * init reaches {@code runsc}, it closes the transport, which ends the pending handshake at once.
     */
    private static final class StallWatch implements AutoCloseable {
        private final ScheduledExecutorService timer;
        private volatile boolean fired;

        StallWatch(GuestWatcher console, SandboxTransport transport) {
            timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "qvm-boot-stall-watch");
                t.setDaemon(true);
                return t;
            });
            timer.scheduleWithFixedDelay(() -> {
                console.poll();
                // A guest making its class archive has booted: the watch is for kernels stuck early.
                if (!console.reached(InitEvents.Phase.RUNSC) && !console.reached(InitEvents.Phase.ARCHIVE_MAKE)
                        && console.silentFor().compareTo(GUEST_STALL) > 0) {
                    fired = true;
                    transport.close();
                    timer.shutdown();
                }
            }, 1, 1, TimeUnit.SECONDS);
        }

        boolean fired() {
            return fired;
        }

        @Override
        public void close() {
            timer.shutdownNow();
        }
    }

    /** Whether the class archive file {@code f} holds more than {@code max} bytes. */
    static boolean oversized(Path f, long max) {
        return size(f) > max;
    }
}
