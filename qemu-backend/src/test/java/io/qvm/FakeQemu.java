package io.qvm;

import static org.awaitility.Awaitility.await;

import io.qvm.protocol.image.InitEvents;
import io.qvm.protocol.image.InitEvents.Phase;
import io.qvm.protocol.image.ControlProtocol;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.RenderResult;
import io.qvm.transport.testing.FakeWorker;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A stand-in for {@code qemu-system-x86_64}, run as a real process by the real launcher: a fake
 * <em>peer</em> that speaks every protocol the backend speaks to QEMU and the guest, on the
 * sockets and files the argv names. It answers {@code --version} and {@code -accel help} like
 * QEMU 8.2 (or the scenario's {@code qemuVersion}), prints the functional probe's marker when booted with {@code -serial stdio}, and
 * otherwise plays a whole sandbox:
 *
 * <ul>
 * <li>{@code -pidfile}: its own pid;
 * <li>{@code -chardev file,id=con}: the guest console (kernel lines, the init's events echoed, and
 *     what the scenario's worker prints there);
 * <li>{@code -chardev file,id=qvme}: the init's events port ({@code InitEvents});
 * <li>{@code -chardev socket,id=qmp}: a QMP server (greeting, {@code qmp_capabilities},
 *     {@code query-status}, {@code cont}, {@code stop}, {@code migrate} to a {@code unix:} URI,
 *     {@code migrate-incoming fd:0} (its stdin), {@code query-migrate}, {@code quit},
 *     {@code system_powerdown});
 * <li>{@code -runas}/{@code -run-with}: accepted (a JVM cannot drop its uid; tests of the drop
 *     itself run a real QEMU);
 * <li>{@code -chardev socket,id=qvmw}: the worker's port, served by {@link FakeWorker} (real frames);
 * <li>{@code -chardev socket,id=qvmc}: the init's control port ({@code restore}/{@code ping}).
 * </ul>
 *
 * What goes wrong is set per test in {@code scenario.properties} next to the launcher script
 * (see {@link FakeQemuHost}); {@code boots} there counts the sandboxes this QEMU played,
 * {@code argv} holds the last sandbox's command line (one argument per line), and {@code seeds}
 * the seeds the host sent with {@code restore}, one per line.
 * <pre>
 *  qemuVersion=X.Y.Z    what --version says (default {@value #VERSION})
 *  workerExitStatus=N    the worker exits with N before READY (then the VM powers off)
 *  failingBoots=K        … in the first K boots only (default: every boot)
 *  initError=TEXT        the init fails with TEXT before it starts the worker
 *  qmpGreeting=false     the QMP socket accepts but never greets
 *  exitAtStart=N         exit with status N at once, after one line on stderr
 *  consoleNoise=TEXT     the worker prints TEXT (one line) on the console before it exits
 *  renderPng=WxH         RENDER is answered with a real W×H PNG …
 *  renderReports=WxH     … whose RENDER_RESULT header says W×H (default: the PNG's size; set it
 *                        to something else for a worker that lies)
 *  renderError=CODE      RENDER is answered with ERROR CODE (TIMEOUT, INTERNAL …)
 *  renderMillis=N        every RENDER is answered N ms late
 *  staleBeforeReady=N    N stray bytes on the worker's port before READY (what an earlier session left)
 *  firstReply=EFFECT     the first request after READY is answered by a hostile worker:
 *                        garbage (1000 stray bytes, then the answer), wrong-id (the answer under
 *                        another id), twice (the answer, then the same answer again),
 *                        oversize (a reply above the response limit), stall (10 bytes of a
 *                        1000-byte reply, then nothing)
 *  flood=FILE            a guest that took over its init (or kernel) writes 1 MiB past the cap of
 *                        FILE (events or console), then goes quiet (a real one would not stop; this
 *                        one spares the test machine's disk when nothing stops it) …
 *  clockLagMillis=N      a restored worker's STATUS clock is N ms behind the host's …
 *  clockSettleMillis=M   … until M ms after its first STATUS (default: it never settles), as
 *                        gVisor's calibrated clock lags after a restore on a loaded host
 *  floodWhen=WHEN        … at boot (before READY, which then never comes), or when idle: once
 *                        the file flood-now appears next to the launcher ({@link FakeQemuHost#floodNow})
 *  forks=N               a restored guest kernel logged N vmgenid reseeds (default 1; 0: none came)
 *  reseeded=0            the init could not reseed the CRNG from the host's seed (default 1)
 *  initClockOffSeconds=N the init's answer to restore says the guest clock is N s behind what it was sent
 *                        (its date -s failed)
 *  migrateMillis=N       an outgoing migration (a template's save) takes N ms
 *  cloneExit=N           a clone's QEMU exits with status N right after {@code cont} (a clone lost on its own;
 *                        the template is sound)
 *  slowBootFrom=K        boots K and later (counting the template VM's) open the worker's port …
 *  slowBootMillis=M      … M ms late (a cold boot on a loaded host)
 *  setclock=silent       the init never answers {@code setclock} (a guest that does not come back from a pause);
 *  setclock=unknown      … answers it as an unknown command (an init older than the word)
 *  step=silent|unknown   the same for {@code step}; step=fail: it answers step-failed (the clock could
 *                        not be read or set); step=stuck: it answers, but the clock does not move
 *  restore=fail          the init answers restore-failed (its clock could not be set or read)
 *  clockSetLagMillis=N   restore and setclock set the guest clock N ms behind what was sent (the command
 *                        took that long to reach the init, a guest just resumed on a loaded host)
 *  pausedSpin=N          the first N QMP stops leave the process burning a core until the next cont (a
 *                        QEMU whose main loop stayed awake through the pause)
 * </pre>
 */
public final class FakeQemu {

    /** The version it claims unless the scenario says {@code qemuVersion=X.Y.Z}: the first that maps a clone's RAM read-only. */
    static final String VERSION = "8.2.2";
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Files held open for the VM's life, as QEMU holds its RAM backend. */
    private static final List<java.nio.channels.FileChannel> HELD = new java.util.concurrent.CopyOnWriteArrayList<>();

    private final Map<String, String> chardevPaths = new HashMap<>();
    private final Properties scenario = new Properties();
    private final Path dir;
    private final List<String> argv;
    private final boolean incoming;
    private Path console;
    private Path events;
    private Path archiveOut;
    private boolean archiveWithoutEnd;
    private Path pidFile;
    private volatile String runState;
    private final AtomicReference<String> migration = new AtomicReference<>("none");
    private volatile boolean exiting;
    /** QMP stops so far, and whether a busy thread now burns CPU in a VM that is stopped ({@code pausedSpin}). */
    private final java.util.concurrent.atomic.AtomicInteger stops = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger spinToken = new java.util.concurrent.atomic.AtomicInteger();
    /** Where the spin's work goes, so that it is not optimized away. */
    private volatile long spinSink;
    /**
     * The guest's wall clock, as a real guest's behaves: it stands still while the VM is stopped
     * (QMP {@code stop} .. {@code cont}) and is set by the init's {@code setclock}/{@code restore}.
     */
    private final Object clock = new Object();
    private long clockOffsetMillis;
    private long stoppedSinceMillis = -1;

    /** The guest's wall clock now (epoch milliseconds). */
    private long guestMillis() {
        synchronized (clock) {
            long now = System.currentTimeMillis();
            return (stoppedSinceMillis >= 0 ? stoppedSinceMillis : now) + clockOffsetMillis;
        }
    }

    private void setGuestClock(long epochSeconds) {
        synchronized (clock) {
            long base = stoppedSinceMillis >= 0 ? stoppedSinceMillis : System.currentTimeMillis();
            clockOffsetMillis = epochSeconds * 1000 - base
                    - Long.parseLong(scenario.getProperty("clockSetLagMillis", "0"));
        }
    }

    /** The init's {@code step}: the clock moves by exactly {@code micros} (to the millisecond here). */
    private void stepGuestClock(long micros) {
        synchronized (clock) {
            clockOffsetMillis += Math.round(micros / 1000.0);
        }
    }

    private void vmStopped(boolean stopped) {
        synchronized (clock) {
            long now = System.currentTimeMillis();
            if (stopped && stoppedSinceMillis < 0) {
                stoppedSinceMillis = now;
            } else if (!stopped && stoppedSinceMillis >= 0) {
                clockOffsetMillis -= now - stoppedSinceMillis; // the time it stood still is lost
                stoppedSinceMillis = -1;
            }
        }
    }

    /**
     * A main loop that stays awake in a stopped VM, as one QEMU pause in about twelve did here: a
     * thread burns a core until the next {@code cont}.
     */
    private void spinInStop() {
        int token = spinToken.get();
        Thread t = new Thread(() -> {
            long x = 0;
            while (spinToken.get() == token) {
                x += System.nanoTime() & 1;
            }
            spinSink = x;
        }, "paused-spin");
        t.setDaemon(true);
        t.start();
    }

    /** One line of what the host did to this VM, in order ({@code vm.log} next to the launcher). */
    private void log(String what) {
        try {
            Files.writeString(dir.resolve("vm.log"), what + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private FakeQemu(Path dir, List<String> argv) throws IOException {
        this.dir = dir;
        this.argv = List.copyOf(argv);
        Path sc = dir.resolve("scenario.properties");
        if (Files.exists(sc)) {
            try (InputStream in = Files.newInputStream(sc)) {
                scenario.load(in);
            }
        }
        boolean inc = false;
        for (int i = 0; i < argv.size(); i++) {
            String a = argv.get(i);
            String next = i + 1 < argv.size() ? argv.get(i + 1) : "";
            if (a.equals("-chardev")) {
                Map<String, String> opts = options(next);
                String path = opts.get("path");
                if (next.startsWith("file,") && "qvme".equals(opts.get("id"))) {
                    events = Path.of(path);
                } else if (next.startsWith("file,") && "qvma".equals(opts.get("id"))) {
                    archiveOut = Path.of(path);
                    Files.write(archiveOut, new byte[0]); // as QEMU opens a file chardev at its start
                } else if (next.startsWith("file,")) {
                    console = Path.of(path);
                } else if (path != null) {
                    chardevPaths.put(opts.get("id"), path);
                }
            } else if (a.equals("-object") && next.startsWith("memory-backend-file,")) {
                Map<String, String> opts = options(next);
                Path ram = Path.of(opts.get("mem-path"));
                if ("off".equals(opts.get("share"))) {
                    // as QEMU does: the file stays open while the VM runs; read-only only with readonly=on (QEMU >= 8.2)
                    HELD.add(java.nio.channels.FileChannel.open(ram, "on".equals(opts.get("readonly"))
                            ? java.util.Set.of(StandardOpenOption.READ)
                            : java.util.Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE)));
                }
                if ("on".equals(opts.get("share")) && !Files.exists(ram)) {
                    // QEMU creates a shared RAM file of the machine's size (sparse until written)
                    long mib = Long.parseLong(opts.get("size").replace("M", ""));
                    try (var f = java.nio.channels.FileChannel.open(ram, StandardOpenOption.CREATE_NEW,
                            StandardOpenOption.WRITE)) {
                        f.write(ByteBuffer.wrap("guest pages".getBytes(StandardCharsets.UTF_8)), 0);
                        f.truncate(mib << 20);
                        f.write(ByteBuffer.wrap(new byte[1]), (mib << 20) - 1);
                    }
                }
            } else if (a.equals("-pidfile")) {
                pidFile = Path.of(next);
            } else if (a.equals("-incoming")) {
                inc = true;
            }
        }
        this.incoming = inc;
        this.runState = inc ? "inmigrate" : "running";
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        List<String> argv = List.of(args).subList(1, args.length);
        if (argv.contains("--version")) {
            Properties sc = new Properties();
            Path scFile = dir.resolve("scenario.properties");
            if (Files.exists(scFile)) {
                try (InputStream in = Files.newInputStream(scFile)) {
                    sc.load(in);
                }
            }
            System.out.println("QEMU emulator version " + sc.getProperty("qemuVersion", VERSION) + " (fake)");
            System.out.println("Copyright (c) 2003-2022 Fabrice Bellard and the QEMU Project developers");
            return;
        }
        if (argv.contains("-accel") && argv.get(argv.indexOf("-accel") + 1).equals("help")) {
            System.out.println("Accelerators supported in QEMU binary:");
            System.out.println("tcg");
            System.out.println("kvm");
            return;
        }
        if (argv.contains("-serial") && argv.get(argv.indexOf("-serial") + 1).equals("stdio")) {
            System.out.println("[    0.000000] Linux version 6.1.0-fake");
            System.out.println("[    0.500000] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)");
            return; // -no-reboot: QEMU exits
        }
        new FakeQemu(dir, argv).run();
    }

    private void run() throws Exception {
        String exitAtStart = scenario.getProperty("exitAtStart");
        if (exitAtStart != null) {
            System.err.println("qemu-system-x86_64: -device vmgenid: this fake was told to fail");
            System.exit(Integer.parseInt(exitAtStart));
        }
        int boot = countBoot();
        Files.write(dir.resolve("argv"), argv);
        Files.writeString(pidFile, ProcessHandle.current().pid() + "\n");
        Files.writeString(dir.resolve("pids"), ProcessHandle.current().pid() + "\n", StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
        consoleLine("[    0.000000] Linux version 6.1.0-fake (fake QEMU, boot " + boot + ")");
        String initError = scenario.getProperty("initError");
        boolean dies = workerDiesNow(boot);
        if (!incoming) {
            // the guest's boot, as far as the console shows it, before the worker's port opens
            if (initError != null) {
                event(InitEvents.ERROR + initError);
            } else {
                event(phase(Phase.INIT, "0.40"));
                makeArchive();
                event(phase(Phase.RUNSC, "0.90"));
            }
        }
        String flood = scenario.getProperty("flood");
        boolean floodAtBoot = flood != null && scenario.getProperty("floodWhen", "boot").equals("boot") && !incoming;
        if (floodAtBoot) {
            flood(flood);
        }
        FakeWorker.Builder script = FakeWorker.builder().answerHello(!dies && initError == null && !floodAtBoot
                && !archiveWithoutEnd);
        // renders are logged (ECHO and STATUS are not: tests read the host's QMP and control steps around them)
        script.onRequest(f -> {
            if (f.kind() == io.qvm.protocol.FrameKind.RENDER) {
                log("worker RENDER " + f.body().length + " B");
            }
        });
        String stale = scenario.getProperty("staleBeforeReady");
        if (stale != null) {
            script.onConnect(FakeWorker.garbage(Integer.parseInt(stale), 11));
        }
        String lag = scenario.getProperty("clockLagMillis");
        script.clock(this::guestMillis);
        if (lag != null && incoming) {
            long lagMillis = Long.parseLong(lag);
            long settle = Long.parseLong(scenario.getProperty("clockSettleMillis", String.valueOf(Long.MAX_VALUE / 4)));
            long[] first = {0};
            script.clock(() -> {
                long now = System.currentTimeMillis();
                synchronized (first) {
                    if (first[0] == 0) {
                        first[0] = now;
                    }
                    return now - first[0] >= settle ? now : now - lagMillis;
                }
            });
        }
        String png = scenario.getProperty("renderPng");
        if (png != null) {
            int[] real = size(png);
            int[] said = size(scenario.getProperty("renderReports", png));
            script.renders(new RenderResult(png(real[0], real[1]), said[0], said[1], 5));
        }
        String renderError = scenario.getProperty("renderError");
        if (renderError != null) {
            script.renderError(io.qvm.protocol.ErrorCode.valueOf(renderError));
        }
        script.renderMillis(Long.parseLong(scenario.getProperty("renderMillis", "0")));
        String slowFrom = scenario.getProperty("slowBootFrom");
        if (slowFrom != null && !incoming && boot >= Integer.parseInt(slowFrom)) {
            Thread.sleep(Long.parseLong(scenario.getProperty("slowBootMillis", "0")));
        }
        FakeWorker worker = script.unix(Path.of(chardevPaths.get("qvmw")));
        String first = scenario.getProperty("firstReply");
        if (first != null) {
            worker.enqueue(switch (first) {
                case "garbage" -> FakeWorker.Effect.rawBytesThenNormal(FakeWorker.garbage(1000, 3));
                case "wrong-id" -> FakeWorker.Effect.wrongId(1);
                case "twice" -> FakeWorker.Effect.answerTwice();
                case "oversize" -> FakeWorker.Effect.replyWithBody((int) SandboxConfig.defaults().maxResponseBytes() + 1);
                case "stall" -> FakeWorker.Effect.partialReply(1000, 10);
                default -> throw new IllegalArgumentException("firstReply=" + first);
            });
        }
        serve("qmp", this::qmpSession);
        serve("qvmc", this::controlSession);
        if (flood != null && !floodAtBoot) {
            floodWhenTold(flood);
        }
        if (!incoming && initError != null) {
            Thread.sleep(300);
            powerOff(worker, 1);
        }
        if (dies) {
            Thread.sleep(300);
            String noise = scenario.getProperty("consoleNoise");
            if (noise != null) {
                consoleLine(noise);
            }
            event(workerExit(scenario.getProperty("workerExitStatus"), "1.50"));
            powerOff(worker, 0);
        }
        // The guest powers off when the worker exits: here, once it said GOODBYE.
        await().forever().pollInterval(Duration.ofMillis(50)).until(() -> exiting
                || worker.received().stream().anyMatch(f -> f.kind() == FrameKind.GOODBYE));
        if (!exiting) {
            Thread.sleep(100); // the worker's exit takes a moment, as in the guest
            event(workerExit("0", "9.00"));
            powerOff(worker, 0);
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    private static int[] size(String wxh) {
        String[] p = wxh.split("x");
        return new int[] {Integer.parseInt(p[0]), Integer.parseInt(p[1])};
    }

    /** A real PNG of that size, as the worker's encoder writes one. */
    private static byte[] png(int width, int height) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        javax.imageio.ImageIO.write(new java.awt.image.BufferedImage(width, height,
                java.awt.image.BufferedImage.TYPE_INT_ARGB), "png", out);
        return out.toByteArray();
    }

    /**
     * What the init does when asked for a class archive ({@code qvm.class_archive=make} and a
     * file behind the port {@code qvm.archive}), as the scenario's {@code archive} says: {@code ok}
     * (the default: a small file that starts as a CDS archive, announced with its size),
     * {@code fail} (the init reports it could not), {@code lie} (one byte more announced than
     * written), {@code garbage} (not a CDS archive), {@code huge} (64 KiB every 20 ms without
     * end), {@code silent} (no event at all).
     */
    private void makeArchive() throws IOException {
        boolean asked = argv.stream().anyMatch(a -> a.contains("qvm.class_archive=make"));
        if (!asked || archiveOut == null) {
            return;
        }
        String mode = scenario.getProperty("archive", "ok");
        event(phase(Phase.ARCHIVE_MAKE, "0.50"));
        byte[] body = new byte[4096];
        new java.util.Random(7).nextBytes(body);
        if (!mode.equals("garbage")) {
            body[0] = (byte) 0xa2;
            body[1] = (byte) 0xab;
            body[2] = 0x0b;
            body[3] = (byte) 0xf0;
        }
        switch (mode) {
            case "fail" -> event(phase(Phase.ARCHIVE_FAILED, "0.60"));
            case "silent" -> { }
            case "huge" -> {
                // 64 KiB every 20 ms, without end, and the worker never answers: only the host's cap stops it
                archiveWithoutEnd = true;
                byte[] chunk = new byte[64 * 1024];
                System.arraycopy(body, 0, chunk, 0, 4);
                Thread t = new Thread(() -> {
                    try (OutputStream o = Files.newOutputStream(archiveOut, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
                        while (true) {
                            o.write(chunk);
                            o.flush();
                            Thread.sleep(20);
                        }
                    } catch (IOException | InterruptedException e) {
                        // the VM is going
                    }
                }, "fake-archive");
                t.setDaemon(true);
                t.start();
            }
            default -> {
                Files.write(archiveOut, body, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                long announced = body.length + (mode.equals("lie") ? 1 : 0);
                event(InitEvents.PHASE + Phase.ARCHIVE.id() + " " + InitEvents.BYTES + announced + " "
                        + InitEvents.UPTIME + "0.70");
            }
        }
    }

    /** An event as the init writes it ({@link InitEvents}). */
    private static String phase(Phase p, String uptime) {
        return InitEvents.PHASE + p.id() + " " + InitEvents.UPTIME + uptime;
    }

    private static String workerExit(String status, String uptime) {
        return InitEvents.PHASE + Phase.WORKER_EXIT.id() + " " + InitEvents.STATUS + status + " "
                + InitEvents.UPTIME + uptime;
    }

    private boolean workerDiesNow(int boot) {
        String status = scenario.getProperty("workerExitStatus");
        int failing = Integer.parseInt(scenario.getProperty("failingBoots", "1000000"));
        return status != null && boot <= failing && !incoming;
    }

    private int countBoot() throws IOException {
        Path counter = dir.resolve("boots");
        synchronized (FakeQemu.class) {
            int n = Files.exists(counter) ? Integer.parseInt(Files.readString(counter).strip()) : 0;
            Files.writeString(counter, Integer.toString(n + 1));
            return n + 1;
        }
    }

    private void powerOff(FakeWorker worker, int status) throws IOException {
        exiting = true;
        event(phase(Phase.POWEROFF, "9.50"));
        worker.close();
        System.exit(status);
    }

    /**
     * What a guest that owns its init (or kernel) can do: write to the events port (or the
     * console) without end. QEMU appends it all to the file; only the host can stop it.
     */
    private void flood(String which) throws IOException {
        Path file = switch (which) {
            case "events" -> events;
            case "console" -> console;
            default -> throw new IllegalArgumentException("flood=" + which);
        };
        long cap = which.equals("events") ? io.qvm.internal.sandbox.GuestWatcher.MAX_EVENT_BYTES
                : InitEvents.CONSOLE_MAX_BYTES;
        byte[] chunk = "qvm: phase=init uptime=0.00 flood\n".repeat(2048).getBytes(StandardCharsets.UTF_8);
        try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
            for (long written = 0; written < cap + (1 << 20); written += chunk.length) {
                out.write(chunk);
                out.flush();
            }
        }
    }

    /** Floods once the test creates {@code flood-now} in this fake's directory (its sandbox idle). */
    private void floodWhenTold(String which) {
        Thread t = new Thread(() -> {
            try {
                await().forever().pollInterval(Duration.ofMillis(50)).until(() -> Files.exists(dir.resolve("flood-now")));
                flood(which);
            } catch (IOException e) {
                // killed meanwhile: nothing to do
            }
        }, "fake-qemu-flood");
        t.setDaemon(true);
        t.start();
    }

    /** An event, as the init reports it: on the events port, echoed on the console. */
    private void event(String line) throws IOException {
        consoleLine(line);
        Files.writeString(events, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }

    private void consoleLine(String line) throws IOException {
        Files.writeString(console, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }

    // ---- sockets -------------------------------------------------------------------------------

    private interface Session {
        void run(SocketChannel ch) throws Exception;
    }

    private void serve(String chardev, Session session) throws IOException {
        Path path = Path.of(chardevPaths.get(chardev));
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(path));
        Thread t = new Thread(() -> {
            while (true) {
                try (SocketChannel ch = server.accept()) {
                    session.run(ch);
                } catch (Exception e) {
                    if (!server.isOpen()) {
                        return;
                    }
                }
            }
        }, "fake-qemu-" + chardev);
        t.setDaemon(true);
        t.start();
    }

    private void controlSession(SocketChannel ch) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
        OutputStream out = Channels.newOutputStream(ch);
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.split(" ");
            log("control " + w[0]);
            String behaviour = w[0].equals(ControlProtocol.SET_CLOCK) ? scenario.getProperty("setclock")
                    : w[0].equals(ControlProtocol.STEP) ? scenario.getProperty("step")
                    : w[0].equals(ControlProtocol.RESTORE) ? scenario.getProperty("restore") : null;
            if ("silent".equals(behaviour)) {
                continue;
            }
            if ("unknown".equals(behaviour) || "fail".equals(behaviour)) {
                String reason = !"fail".equals(behaviour) ? ControlProtocol.UNKNOWN_COMMAND
                        : w[0].equals(ControlProtocol.RESTORE) ? ControlProtocol.RESTORE_FAILED : ControlProtocol.STEP_FAILED;
                out.write((ControlProtocol.ERROR + " " + w[2] + " " + reason + "\n")
                        .getBytes(StandardCharsets.UTF_8));
                out.flush();
                continue;
            }
            if (w[0].equals(ControlProtocol.STEP)) {
                Files.writeString(dir.resolve("steps"), w[1] + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
                if (!"stuck".equals(behaviour)) {
                    stepGuestClock(Long.parseLong(w[1]));
                }
            }
            if ((w[0].equals(ControlProtocol.RESTORE) || w[0].equals(ControlProtocol.SET_CLOCK)) && w.length >= 3) {
                setGuestClock(Long.parseLong(w[1]));
            }
            if (w[0].equals(ControlProtocol.RESTORE) && w.length == 4) {
                Files.writeString(dir.resolve("seeds"), w[3] + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            }
            String answer = switch (w[0]) {
                // like the init: forks= from the kernel's log (scenario "forks", default 1), and
                // reseeded= whether the host's seed went in (scenario "reseeded", default 1)
                case ControlProtocol.RESTORE -> ControlProtocol.RESTORED + " " + w[2] + " " + ControlProtocol.CLOCK
                        + (Long.parseLong(w[1]) - Long.parseLong(scenario.getProperty("initClockOffSeconds", "0")))
                        + " " + ControlProtocol.FORKS + scenario.getProperty("forks", "1") + " "
                        + ControlProtocol.RESEEDED + (w.length == 4 ? scenario.getProperty("reseeded", "1") : "0");
                case ControlProtocol.SET_CLOCK -> ControlProtocol.CLOCK_SET + " " + w[2] + " " + ControlProtocol.CLOCK
                        + guestMillis() / 1000;
                case ControlProtocol.STEP -> {
                    long g = guestMillis();
                    yield ControlProtocol.STEPPED + " " + w[2] + " " + ControlProtocol.CLOCK + g / 1000 + "."
                            + String.format("%03d000", g % 1000);
                }
                case ControlProtocol.PING -> ControlProtocol.PONG + " " + w[1];
                default -> "unknown " + w[0];
            };
            out.write((answer + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        }
    }

    private void qmpSession(SocketChannel ch) throws Exception {
        if (!Boolean.parseBoolean(scenario.getProperty("qmpGreeting", "true"))) {
            Thread.sleep(Long.MAX_VALUE);
        }
        PrintStream out = new PrintStream(Channels.newOutputStream(ch), true, StandardCharsets.UTF_8);
        int[] v = java.util.Arrays.stream(scenario.getProperty("qemuVersion", VERSION).split("\\."))
                .mapToInt(Integer::parseInt).toArray();
        out.print("{\"QMP\": {\"version\": {\"qemu\": {\"micro\": " + v[2] + ", \"minor\": " + v[1] + ", \"major\": "
                + v[0] + "}, \"package\": \"\"},"
                + " \"capabilities\": [\"oob\"]}}\r\n");
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode cmd = JSON.readTree(line);
            String name = cmd.path("execute").asText();
            log("qmp " + name);
            ObjectNode reply = JSON.createObjectNode();
            if (cmd.has("id")) {
                reply.set("id", cmd.get("id"));
            }
            ObjectNode ret = reply.putObject("return");
            switch (name) {
                case "query-status" -> {
                    ret.put("status", runState);
                    ret.put("running", runState.equals("running"));
                }
                case "cont" -> {
                    runState = "running";
                    vmStopped(false);
                    spinToken.incrementAndGet(); // any spin of the last stop ends
                }
                case "stop" -> {
                    runState = "paused";
                    vmStopped(true);
                    if (stops.incrementAndGet() <= Integer.parseInt(scenario.getProperty("pausedSpin", "0"))) {
                        spinInStop();
                    }
                }
                case "query-migrate" -> ret.put("status", migration.get());
                case "migrate" -> migrateOut(uri(cmd));
                case "migrate-incoming" -> migrateIn(cmd.path("arguments").path("uri").asText());
                default -> {
                    // qmp_capabilities, migrate-set-capabilities, quit, system_powerdown…: {}
                }
            }
            out.print(JSON.writeValueAsString(reply) + "\r\n");
            out.flush();
            if (name.equals("cont") && incoming && scenario.getProperty("cloneExit") != null) {
                exiting = true;
                System.exit(Integer.parseInt(scenario.getProperty("cloneExit")));
            }
            if (name.equals("quit") || name.equals("system_powerdown")) {
                out.print("{\"event\": \"SHUTDOWN\", \"data\": {\"guest\": " + name.equals("system_powerdown")
                        + ", \"reason\": \"" + (name.equals("quit") ? "host-qmp-quit" : "guest-shutdown")
                        + "\"}, \"timestamp\": {\"seconds\": 0, \"microseconds\": 0}}\r\n");
                out.flush();
                exiting = true;
                System.exit(0);
            }
        }
    }

    private static Path uri(JsonNode cmd) {
        String uri = cmd.path("arguments").path("uri").asText();
        if (!uri.startsWith("unix:")) {
            throw new IllegalArgumentException("this fake migrates over unix: URIs only, got " + uri);
        }
        return Path.of(uri.substring("unix:".length()));
    }

    /** {@code migrate}: connect to the host's socket and write a state stream. */
    private void migrateOut(Path socket) {
        migration.set("active");
        Thread t = new Thread(() -> {
            try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
                Thread.sleep(Long.parseLong(scenario.getProperty("migrateMillis", "0")));
                byte[] state = ("QEVM fake device state of " + pidFile + "\n").repeat(64).getBytes(StandardCharsets.UTF_8);
                ch.write(ByteBuffer.wrap(state));
                migration.set("completed");
                runState = "postmigrate";
            } catch (IOException e) {
                migration.set("failed");
            } catch (InterruptedException e) {
                migration.set("failed");
                Thread.currentThread().interrupt();
            }
        }, "fake-qemu-migrate");
        t.setDaemon(true);
        t.start();
    }

    /** {@code migrate-incoming fd:0}: read the state stream from stdin to its end. */
    private void migrateIn(String uri) {
        if (!uri.equals("fd:0")) {
            throw new IllegalArgumentException("this fake loads a migration from its stdin (fd:0) only, got " + uri);
        }
        migration.set("active");
        Thread t = new Thread(() -> {
            try (InputStream in = System.in) {
                byte[] buf = new byte[1 << 16];
                long total = 0;
                int n;
                while ((n = in.read(buf)) >= 0) {
                    total += n;
                }
                migration.set(total > 0 ? "completed" : "failed");
                runState = "paused";
            } catch (IOException e) {
                migration.set("failed");
            }
        }, "fake-qemu-incoming");
        t.setDaemon(true);
        t.start();
    }

    private static Map<String, String> options(String spec) {
        Map<String, String> out = new HashMap<>();
        List<String> parts = new ArrayList<>(List.of(spec.split(",")));
        for (String p : parts) {
            int eq = p.indexOf('=');
            if (eq > 0) {
                out.put(p.substring(0, eq), p.substring(eq + 1));
            }
        }
        return out;
    }
}
