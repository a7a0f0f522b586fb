package io.qvm.cli;

import io.qvm.admin.SandboxRecord;
import io.qvm.admin.SandboxStates;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.BootReport;
import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.SandboxBackend;
import io.qvm.SandboxConfig;
import io.qvm.SandboxPool;
import io.qvm.cli.control.ControlServer;
import io.qvm.cli.control.ControlTarget;
import io.qvm.cli.control.ReadyFile;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code qvm up}: hosts a session — serves its control socket, writes its ready.json — until
 * Ctrl-C, {@code qvm down}, its idle timeout, its maximum lifetime or (with {@code --reuse}) the
 * sandbox's own exit. {@code --detach} runs the same thing in a detached supervisor process
 * ({@link DetachLauncher}).
 *
 * <p>By default each {@code qvm render} gets a sandbox of its own: a {@link SandboxPool} with
 * {@link SandboxPool.Recycle#perRequest()} restores one from the template ahead of time, hands it
 * to one document and stops it afterwards, so no document ever shares a worker with another (as
 * the library's pool does). The session has an id and a state directory of its own (no QEMU in
 * it); each sandbox has its own id, which {@code qvm render} reports. Where templates do not work
 * here, the sandboxes cold-boot instead — slower, said loudly, but never a silent fallback to
 * sharing. {@code --reuse} keeps one sandbox for every document (the session's id is then the
 * sandbox's).
 */
@Command(name = "up", sortOptions = false,
        description = {"Start a sandbox session and keep it running for qvm render.",
            "By default every qvm render gets a fresh sandbox (restored from a template ahead of time, "
                    + "stopped after its one document); --reuse serves every document from one sandbox. "
                    + "In the foreground it shows its progress, its id, accelerator and boot phases, then stays until "
                    + "Ctrl-C, qvm down, --idle-timeout or --max-lifetime ends it cleanly. With --detach a "
                    + "supervisor process hosts it and qvm up prints its id and returns."},
        footer = {"", "DURATION: a number and a unit (90s, 30m, 2h, 1d), or off.",
            "Exit 0 when Ctrl-C, qvm down, --idle-timeout or --max-lifetime ended the session (its last",
            "line says which); 1 when its sandbox exited by itself (--reuse); 4 when the first sandbox did not boot.",
            "", "JSON (--json), schema qvm.up/1:",
            "  {\"schema\":\"qvm.up/1\", \"id\", \"detached\", \"supervisorPid\", \"qemuPid\", \"accelerator\", \"machine\",",
            "   \"transport\", \"bootMillis\":{phase:ms}, \"totalMillis\", \"controlSocket\", \"stateDir\", \"notes\":[...],",
            "   \"mode\":\"fresh-per-render|reused\", \"freshSandboxes\":\"restored|cold-booted|null\",",
            "   \"idleTimeoutSeconds\", \"maxLifetimeSeconds\"}   (null: off)",
            "Errors: {\"schema\":\"qvm.error/1\", \"ok\":false, \"exitCode\", \"exitName\", \"code\", \"message\", \"hint\"}"})
final class UpCommand implements Callable<Integer> {

    static final String CONTROL_SOCKET = "ctl.sock";
    /** What a server would pick: a forgotten session goes after half an hour; none lives past a day. */
    static final String DEFAULT_IDLE_TIMEOUT = "30m";
    static final String DEFAULT_MAX_LIFETIME = "24h";
    /** Sandboxes of a fresh-per-render session at once: the one rendering and the one started ahead. */
    static final int MAX_SANDBOXES = 2;

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Mixin
    SandboxOptions sandboxOptions;

    @Option(names = "--reuse", description = "Serve every render from one sandbox, which keeps whatever earlier "
            + "documents did to its worker (default: a fresh sandbox per render).")
    boolean reuse;

    @Option(names = "--idle-timeout", paramLabel = "DURATION", defaultValue = DEFAULT_IDLE_TIMEOUT,
            description = "End the session after this long without a request (default ${DEFAULT-VALUE}).")
    String idleTimeout;

    @Option(names = "--max-lifetime", paramLabel = "DURATION", defaultValue = DEFAULT_MAX_LIFETIME,
            description = "End the session this long after it became ready, busy or not (default ${DEFAULT-VALUE}).")
    String maxLifetime;

    @Option(names = {"-d", "--detach"}, description = "Leave the session running in a detached supervisor and print its id.")
    boolean detach;

    @Option(names = "--wait", paramLabel = "SECONDS",
            description = "With --detach: how long to wait for READY (default: the boot timeout + 120 s).")
    Integer waitSeconds;

    @Option(names = "--supervise", hidden = true, paramLabel = "HANDLE",
            description = "Internal: run as the detached supervisor of launch HANDLE.")
    String supervise;

    private final CliContext ctx;

    UpCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        if (detach && supervise != null) {
            throw new ParameterException(spec.commandLine(), "--detach and --supervise exclude each other");
        }
        if (waitSeconds != null && (!detach || waitSeconds < 1)) {
            throw new ParameterException(spec.commandLine(), "--wait needs --detach and at least 1 second");
        }
        if (supervise != null) {
            if (!SandboxStates.isValidId(supervise)) {
                throw new ParameterException(spec.commandLine(), "not a sandbox id: " + supervise);
            }
        }
        Optional<Duration> idle = SessionLimit.parse(spec.commandLine(), "--idle-timeout", idleTimeout);
        Optional<Duration> lifetime = SessionLimit.parse(spec.commandLine(), "--max-lifetime", maxLifetime);
        SandboxConfig config = sandboxOptions.toConfig();
        PrintWriter err = spec.commandLine().getErr();
        if (supervise == null) {
            Progress building = new Progress(err, ctx.interactive() && !json.enabled());
            MissingImage.buildIfMissing(ctx, ctx.imageRoot(dirs.imageDir), building);
            building.done();
        }
        if (detach) {
            Progress progress = new Progress(err, ctx.interactive() && !json.enabled());
            Duration wait = waitSeconds != null ? Duration.ofSeconds(waitSeconds)
                    : config.bootTimeout().plusSeconds(120);
            List<String> sessionArgs = new ArrayList<>(List.of("--idle-timeout", idleTimeout, "--max-lifetime",
                    maxLifetime));
            if (reuse) {
                sessionArgs.add("--reuse");
            }
            return new DetachLauncher(ctx, dirs, sandboxOptions, sessionArgs, progress).launch(wait,
                    spec.commandLine().getOut(), json.enabled());
        }
        return foreground(config, idle, lifetime);
    }

    private int foreground(SandboxConfig config, Optional<Duration> idle, Optional<Duration> lifetime) throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        boolean supervisor = supervise != null;
        Progress progress = new Progress(err, ctx.interactive() && !json.enabled() && !supervisor);
        Path stateRoot = ctx.stateRoot(dirs.stateDir);
        Path launchDir = supervisor ? Launch.dir(stateRoot, supervise) : null;
        Hosted hosted = new Hosted();
        Thread hook = new Thread(() -> hosted.shutdown(), "qvm-up-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        boolean ready = false;
        // A detached supervisor's launcher that gives up asks it to stop through the launch
        // directory (Launch): the exit runs the hook above, which stops what is booting.
        // The boot is interrupted first, so that this thread's own catch and finally release what
        // it started; the exit (and its hook) follows only if that does not end it in time.
        Thread booting = Thread.currentThread();
        Launch.StopWatch stopWatch = supervisor ? Launch.StopWatch.start(launchDir, () -> {
            progress.line("the launcher stopped waiting (its --wait passed, or it was interrupted): stopping");
            booting.interrupt();
            try {
                booting.join(Launch.STOP_GRACE.toMillis());
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
            System.exit(ExitCode.BOOT_FAILED.code());
        }) : null;
        try {
            hosted.backend = ctx.backend(dirs, progress::line).build();
            Session session = reuse ? startReused(hosted, config, stateRoot) : startFresh(hosted, config, stateRoot, progress);
            progress.done();
            String id = session.id();
            Path ctl = controlSocketPath(session);
            hosted.server = ControlServer.start(ctl, session.target(),
                    new FrameLimits(FrameLimits.DEFAULT_HEADER_BYTES, (int) config.maxRequestBytes()),
                    line -> progress.line("session " + id + ": " + line));
            if (stopWatch != null && stopWatch.end()) {
                throw new CliException(ExitCode.BOOT_FAILED, "STOPPED", "the launcher stopped waiting before the "
                        + "sandbox was ready", "raise --wait or --boot-timeout", null);
            }
            Path supervisorLog = supervisor ? moveLog(launchDir, session.stateDir()) : null;
            ReadyFile readyFile = readyFile(session, config, ctl, supervisorLog, supervisor, idle, lifetime);
            readyFile.writeTo(session.stateDir());
            hosted.readyDir = session.stateDir();
            if (supervisor) {
                readyFile.writeTo(launchDir);
                progress.line("session " + id + " is ready (" + readyFile.accelerator() + ", "
                        + UpReport.modeText(readyFile.mode(), readyFile.freshSandboxes()) + "); control socket " + ctl);
            } else {
                Output.emit(out, UpReport.of(readyFile, session.stateDir().toString()), json.enabled());
            }
            ready = true;
            return waitForEnd(session, hosted, progress, readyFile, idle, lifetime,
                    config.requestTimeout().plusSeconds(30));
        } catch (Exception | Error e) {
            if (supervisor && !ready) {
                writeFailed(launchDir, Failures.classify(e));
            }
            throw e;
        } finally {
            if (stopWatch != null) {
                stopWatch.end();
            }
            hosted.shutdown();
            progress.done();
            if (supervisor && ready) {
                FileTrees.deleteQuietly(launchDir);
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or has run
            }
        }
    }

    /**
     * What a session serves.
     *
     * @param socketDir where its control socket goes first (else its state directory)
     * @param exited completes when what serves the requests ended by itself (never for a pool)
     * @param first the boot report of its (first) sandbox
     * @param qemuPid the one QEMU of a reused sandbox; null for a pool
     */
    private record Session(String id, Path stateDir, Path socketDir, ControlTarget target,
            CompletableFuture<?> exited, BootReport first, Long qemuPid, String mode, String freshSandboxes,
            List<String> notes) {
    }

    /** {@code --reuse}: one sandbox, whose id is the session's. */
    private Session startReused(Hosted hosted, SandboxConfig config, Path stateRoot) {
        Sandbox sandbox = hosted.backend.start(config);
        hosted.sandbox = sandbox;
        return new Session(sandbox.id(), sandbox.stateDir(), SandboxStates.socketDirectory(ctx.runtimeRoot(), sandbox.id()),
                ControlTarget.reused(sandbox), sandbox.onExit(), sandbox.bootReport(), qemuPid(stateRoot, sandbox),
                ControlTarget.REUSED, null, List.of("--reuse: every document goes to this one sandbox, whose worker "
                        + "keeps whatever earlier documents did to it; without --reuse each render gets a fresh one"));
    }

    /**
     * The default: a session directory of its own and a perRequest pool, one sandbox started
     * ahead; returns once that first sandbox is up (its boot failure fails the session).
     */
    private Session startFresh(Hosted hosted, SandboxConfig config, Path stateRoot, Progress progress)
            throws IOException, InterruptedException {
        String id = supervise != null ? supervise : SandboxStates.newId();
        Path sockets;
        try {
            sockets = SandboxStates.createSocketDirectory(ctx.runtimeRoot(), id);
            hosted.sockets = sockets;
        } catch (IOException | RuntimeException e) {
            sockets = null; // the control socket goes into the session's state directory
        }
        hosted.session = SandboxStates.at(stateRoot).create(id, SESSION_MARKER, Optional.ofNullable(sockets));
        FirstStart first = new FirstStart(hosted.backend);
        hosted.pool = SandboxPool.builder(first, config).recycle(SandboxPool.Recycle.perRequest()).minIdle(1)
                .maxSandboxes(MAX_SANDBOXES).build();
        Sandbox s = first.await(config.bootTimeout().multipliedBy(3).plusMinutes(2));
        BootReport boot = s.bootReport();
        String freshSandboxes = boot.restored() ? "restored" : "cold-booted";
        List<String> notes = new ArrayList<>();
        if (!boot.restored()) {
            String warning = "warning: templates do not work here, so every render's sandbox cold-boots (the first took "
                    + String.format("%.1f s", boot.total().toMillis() / 1000.0) + "); one is booted ahead, so a render "
                    + "waits only when renders come faster than that. Each document still gets a sandbox of its own; "
                    + "--reuse would serve them all from one instead (qvm doctor and qvm template say why templates fail)";
            progress.line(warning);
            notes.add(warning.substring("warning: ".length()));
        }
        Path stateDir = hosted.session.dir();
        Hosted h = hosted;
        ControlTarget target = ControlTarget.freshPerRender(hosted.pool, () -> h.removeSession());
        return new Session(id, stateDir, sockets == null ? stateDir : sockets, target, new CompletableFuture<>(),
                boot, null, ControlTarget.FRESH_PER_RENDER, freshSandboxes, notes);
    }

    /** owner.json's {@code qemuBinary} of a session directory: there is no QEMU of its own. */
    static final String SESSION_MARKER = "qvm-up-session";

    /**
     * Blocks until the session ends: GOODBYE (0), the idle timeout or the maximum lifetime (0,
     * once the renders in progress are answered), or the sandbox's own exit (error).
     */
    private int waitForEnd(Session session, Hosted hosted, Progress progress, ReadyFile r, Optional<Duration> idle,
            Optional<Duration> lifetime, Duration drain) throws Exception {
        ControlServer server = hosted.server;
        CompletableFuture<Object> end = CompletableFuture.anyOf(session.exited(), server.goodbyeReceived());
        long since = System.nanoTime();
        String ended = null;
        while (true) {
            try {
                end.get(1, TimeUnit.SECONDS);
                break;
            } catch (TimeoutException tick) {
                long upNanos = System.nanoTime() - since;
                if (lifetime.isPresent() && upNanos >= lifetime.get().toNanos()) {
                    ended = "it reached its maximum lifetime of " + SessionLimit.format(lifetime.get())
                            + " (--max-lifetime)";
                    if (!server.endAccepting(endedForClients(r.id(), ended), drain)) {
                        progress.line("warning: renders still in progress after " + drain.toSeconds()
                                + " s are cut short");
                    }
                    break;
                }
                if (idle.isPresent() && server.endIfIdle(idle.get(), endedForClients(r.id(), "no request for "
                        + SessionLimit.format(idle.get())))) {
                    ended = "no request for " + SessionLimit.format(idle.get()) + " (--idle-timeout)";
                    break;
                }
                long up = TimeUnit.NANOSECONDS.toSeconds(upNanos);
                progress.status(String.format("session %s running (%s, %s) · up %d:%02d:%02d · %d requests · Ctrl-C stops it",
                        r.id(), r.accelerator(), UpReport.modeText(r.mode(), r.freshSandboxes()), up / 3600,
                        up / 60 % 60, up % 60, server.requestsServed()));
            }
        }
        progress.done();
        if (ended != null) {
            progress.line("session " + r.id() + " is ending: " + ended + "; stopping its sandboxes");
            hosted.shutdown();
            progress.line("session " + r.id() + " ended (" + ended + "); nothing of it is left running");
            return ExitCode.OK.code();
        }
        if (server.goodbyeReceived().isDone()) {
            server.stopRequested().get(5, TimeUnit.MINUTES);
            progress.line("session " + r.id() + " stopped (qvm down)");
            return ExitCode.OK.code();
        }
        throw new CliException(ExitCode.ERROR, "SANDBOX_EXITED", "sandbox " + r.id()
                + " exited by itself; its guest console tail:\n"
                + io.qvm.admin.SandboxRecord.tail(hosted.sandbox.consoleLog(), 2048), null, null);
    }

    private static String endedForClients(String id, String why) {
        return "qvm up session " + id + " has ended (" + why + "); start a new one with qvm up";
    }

    /** {@code ctl.sock} next to the sandbox's other sockets (its runtime directory), else in its state directory. */
    private static Path controlSocketPath(Session session) throws IOException {
        for (Path dir : new Path[] {session.socketDir(), session.stateDir()}) {
            Path p = dir.resolve(CONTROL_SOCKET);
            if (Files.isDirectory(dir) && p.toString().getBytes(StandardCharsets.UTF_8).length
                    <= SandboxStates.MAX_SOCKET_PATH_BYTES) {
                return p;
            }
        }
        throw new IOException("no directory for the control socket of session " + session.id() + ": "
                + session.socketDir() + " does not exist and " + session.stateDir()
                + " is too long for a socket path; set QVM_RUNTIME_DIR to a short directory");
    }

    private static Path moveLog(Path launchDir, Path stateDir) {
        Path from = launchDir.resolve(Launch.LOG);
        Path to = stateDir.resolve(Launch.LOG);
        try {
            Optional<RotatingLog> rotating = RotatingLog.stdio().filter(l -> l.file().equals(from));
            if (rotating.isPresent()) {
                rotating.get().moveTo(to); // it keeps its cap in the new place
            } else {
                Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
            }
            return to;
        } catch (IOException | UnsupportedOperationException e) {
            return from; // another file system, or Windows: the log stays where it is
        }
    }

    private static Long qemuPid(Path stateRoot, Sandbox s) {
        try {
            SandboxRecord st = SandboxStates.at(stateRoot).find(s.id()).orElse(null);
            if (st != null) {
                return st.qemuPid().isPresent() ? st.qemuPid().getAsLong() : null;
            }
        } catch (RuntimeException ignored) {
            // ps falls back to the pidfile
        }
        return null;
    }

    private static ReadyFile readyFile(Session s, SandboxConfig c, Path ctl, Path supervisorLog, boolean detached,
            Optional<Duration> idle, Optional<Duration> lifetime) {
        Map<String, Long> phases = new LinkedHashMap<>();
        s.first().phases().forEach((k, v) -> phases.put(k, v.toMillis()));
        List<String> notes = new ArrayList<>(s.first().notes());
        notes.addAll(s.notes());
        ProcessHandle me = ProcessHandle.current();
        return new ReadyFile(ReadyFile.FORMAT, s.id(), me.pid(),
                me.info().startInstant().map(Instant::toString).orElse(null), detached, ctl.toString(), s.qemuPid(),
                s.first().accelerator(), s.first().machine(), s.first().transport(), phases, notes,
                Instant.now().toString(), supervisorLog == null ? null : supervisorLog.toString(),
                c.maxRequestBytes(), c.maxResponseBytes(), c.requestTimeout().toMillis(), s.mode(), s.freshSandboxes(),
                idle.map(Duration::toSeconds).orElse(null), lifetime.map(Duration::toSeconds).orElse(null));
    }

    private static void writeFailed(Path launchDir, CliException e) {
        ObjectNode n = Output.error(e);
        try {
            Path tmp = launchDir.resolve(Launch.FAILED + ".tmp");
            Files.writeString(tmp, n.toPrettyString());
            Files.move(tmp, launchDir.resolve(Launch.FAILED), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException ignored) {
            // the parent falls back to the exit code and the log
        }
    }

    /**
     * A backend that hands on every sandbox the pool starts and completes {@link #await} with the
     * first one (or its failure): how a session learns its first sandbox's boot report, and whether
     * templates work, through the pool's public API.
     */
    private static final class FirstStart implements SandboxBackend {
        private final SandboxBackend backend;
        private final CompletableFuture<Sandbox> first = new CompletableFuture<>();

        FirstStart(SandboxBackend backend) {
            this.backend = backend;
        }

        @Override
        public Sandbox start(SandboxConfig config) {
            try {
                Sandbox s = backend.start(config);
                first.complete(s);
                return s;
            } catch (RuntimeException | Error e) {
                first.completeExceptionally(e);
                throw e;
            }
        }

        Sandbox await(Duration wait) throws InterruptedException {
            try {
                return first.get(wait.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                if (e.getCause() instanceof RuntimeException r) {
                    throw r;
                }
                throw new io.qvm.SandboxException("the first sandbox failed to start: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new CliException(ExitCode.BOOT_FAILED, "BOOT_TIMEOUT", "the session's first sandbox was not up "
                        + "within " + wait.toSeconds() + " s", "raise --boot-timeout; qvm doctor checks the host", e);
            }
        }

        @Override
        public void close() {
            // the session closes the real backend
        }
    }

    /** What a session owns, closed once by whoever comes first: the normal path or the shutdown hook. */
    private static final class Hosted {
        volatile QemuVmBackend backend;
        volatile Sandbox sandbox;
        volatile SandboxPool pool;
        volatile SandboxRecord session;
        volatile Path sockets;
        volatile ControlServer server;
        volatile Path readyDir;
        private boolean done;

        synchronized void shutdown() {
            if (done) {
                return;
            }
            done = true;
            if (server != null) {
                server.close();
            }
            if (readyDir != null) {
                ReadyFile.delete(readyDir);
            }
            try {
                if (sandbox != null) {
                    sandbox.close();
                }
                if (pool != null) {
                    pool.close();
                }
            } finally {
                try {
                    if (backend != null) {
                        backend.close();
                    }
                } finally {
                    removeSession();
                }
            }
        }

        /** Deletes the session's directories (its ready.json and log with them). Idempotent. */
        void removeSession() {
            SandboxRecord s = session;
            if (s != null) {
                FileTrees.deleteQuietly(s.dir());
            }
            Path p = sockets;
            if (p != null) {
                FileTrees.deleteQuietly(p);
            }
        }
    }
}
