package io.qvm.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.backend.process.SandboxState;
import io.qvm.backend.process.SocketPaths;
import io.qvm.backend.process.StateDirectory;
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
import java.util.LinkedHashMap;
import java.util.Map;
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
 * {@code qvm up}: boots one sandbox and hosts it — serves its control socket, writes its
 * ready.json — until Ctrl-C, {@code qvm down} or the sandbox's own exit. {@code --detach} runs the
 * same thing in a detached supervisor process ({@link DetachLauncher}).
 */
@Command(name = "up", sortOptions = false,
        description = {"Boot one sandbox and keep it running.",
            "In the foreground it shows its progress, its id, accelerator and boot phases, then stays until "
                    + "Ctrl-C (or qvm down) stops it cleanly. With --detach a supervisor process hosts it and "
                    + "qvm up prints its id and returns."},
        footer = {"", "JSON (--json), schema qvm.up/1:",
            "  {\"schema\":\"qvm.up/1\", \"id\", \"detached\", \"supervisorPid\", \"qemuPid\", \"accelerator\", \"machine\",",
            "   \"transport\", \"bootMillis\":{phase:ms}, \"totalMillis\", \"controlSocket\", \"stateDir\", \"notes\":[...]}",
            "Errors: {\"schema\":\"qvm.error/1\", \"ok\":false, \"exitCode\", \"exitName\", \"code\", \"message\", \"hint\"}"})
final class UpCommand implements Callable<Integer> {

    static final String CONTROL_SOCKET = "ctl.sock";

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Mixin
    SandboxOptions sandboxOptions;

    @Option(names = {"-d", "--detach"}, description = "Leave the sandbox running in a detached supervisor and print its id.")
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
            StateDirectory.checkSandboxId(supervise);
        }
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
            return new DetachLauncher(ctx, dirs, sandboxOptions, progress).launch(wait, spec.commandLine().getOut(),
                    json.enabled());
        }
        return foreground(config);
    }

    private int foreground(SandboxConfig config) throws Exception {
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
        try {
            hosted.backend = ctx.backend(dirs, progress::line).build();
            Sandbox sandbox = hosted.backend.start(config);
            hosted.sandbox = sandbox;
            progress.done();
            String id = sandbox.id();
            Path ctl = controlSocketPath(sandbox);
            hosted.server = ControlServer.start(ctl, ControlTarget.of(sandbox),
                    new FrameLimits(FrameLimits.DEFAULT_HEADER_BYTES, (int) config.maxRequestBytes()),
                    line -> progress.line("sandbox " + id + ": " + line));
            Path supervisorLog = supervisor ? moveLog(launchDir, sandbox.stateDir()) : null;
            ReadyFile readyFile = readyFile(sandbox, ctl, supervisorLog, supervisor, stateRoot);
            readyFile.writeTo(sandbox.stateDir());
            hosted.readyDir = sandbox.stateDir();
            if (supervisor) {
                readyFile.writeTo(launchDir);
                progress.line("sandbox " + id + " is ready (" + readyFile.accelerator() + "); control socket " + ctl);
            } else {
                Output.emit(out, UpReport.of(readyFile, sandbox.stateDir().toString()), json.enabled());
            }
            ready = true;
            return waitForEnd(sandbox, hosted.server, progress, readyFile);
        } catch (Exception | Error e) {
            if (supervisor && !ready) {
                writeFailed(launchDir, Failures.classify(e));
            }
            throw e;
        } finally {
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

    /** Blocks until a GOODBYE stopped the sandbox (0) or the sandbox ended by itself (error). */
    private int waitForEnd(Sandbox sandbox, ControlServer server, Progress progress, ReadyFile r) throws Exception {
        CompletableFuture<Object> end = CompletableFuture.anyOf(sandbox.onExit(), server.goodbyeReceived());
        Instant since = Instant.now();
        while (true) {
            try {
                end.get(1, TimeUnit.SECONDS);
                break;
            } catch (TimeoutException tick) {
                long up = Duration.between(since, Instant.now()).toSeconds();
                progress.status(String.format("sandbox %s running (%s) · up %d:%02d:%02d · %d requests · Ctrl-C stops it",
                        r.id(), r.accelerator(), up / 3600, up / 60 % 60, up % 60, server.requestsServed()));
            }
        }
        progress.done();
        if (server.goodbyeReceived().isDone()) {
            server.stopRequested().get(5, TimeUnit.MINUTES);
            progress.line("sandbox " + r.id() + " stopped (qvm down)");
            return ExitCode.OK.code();
        }
        throw new CliException(ExitCode.ERROR, "SANDBOX_EXITED", "sandbox " + r.id()
                + " exited by itself; its guest console tail:\n"
                + io.qvm.backend.process.LogTail.tail(sandbox.consoleLog(), 2048), null, null);
    }

    /** {@code ctl.sock} next to the sandbox's other sockets, else in its state directory. */
    private Path controlSocketPath(Sandbox sandbox) throws IOException {
        Path runtime = SocketPaths.forSandbox(ctx.runtimeRoot(), sandbox.id()).dir();
        for (Path dir : new Path[] {runtime, sandbox.stateDir()}) {
            Path p = dir.resolve(CONTROL_SOCKET);
            if (Files.isDirectory(dir) && p.toString().getBytes(StandardCharsets.UTF_8).length
                    <= SocketPaths.MAX_SOCKET_PATH_BYTES) {
                return p;
            }
        }
        throw new IOException("no directory for the control socket of sandbox " + sandbox.id() + ": " + runtime
                + " does not exist and " + sandbox.stateDir() + " is too long for a socket path;"
                + " set QVM_RUNTIME_DIR to a short directory");
    }

    private static Path moveLog(Path launchDir, Path stateDir) {
        Path from = launchDir.resolve(Launch.LOG);
        Path to = stateDir.resolve(Launch.LOG);
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
            return to;
        } catch (IOException | UnsupportedOperationException e) {
            return from; // another file system, or Windows: the log stays where it is
        }
    }

    private ReadyFile readyFile(Sandbox s, Path ctl, Path supervisorLog, boolean detached, Path stateRoot) {
        Map<String, Long> phases = new LinkedHashMap<>();
        s.bootReport().phases().forEach((k, v) -> phases.put(k, v.toMillis()));
        Long qemuPid = null;
        try {
            SandboxState st = StateDirectory.at(stateRoot).find(s.id()).orElse(null);
            if (st != null) {
                qemuPid = st.owner().qemuPid();
                if (qemuPid == null && st.pidFromPidFile().isPresent()) {
                    qemuPid = st.pidFromPidFile().getAsLong();
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // ps falls back to the pidfile
        }
        ProcessHandle me = ProcessHandle.current();
        SandboxConfig c = s.config();
        return new ReadyFile(ReadyFile.FORMAT, s.id(), me.pid(),
                me.info().startInstant().map(Instant::toString).orElse(null), detached, ctl.toString(), qemuPid,
                s.bootReport().accelerator(), s.bootReport().machine(), s.bootReport().transport(), phases,
                s.bootReport().notes(), Instant.now().toString(), supervisorLog == null ? null : supervisorLog.toString(),
                c.maxRequestBytes(), c.maxResponseBytes(), c.requestTimeout().toMillis());
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

    /** What a hosted sandbox owns, closed once by whoever comes first: the normal path or the shutdown hook. */
    private static final class Hosted {
        volatile QemuVmBackend backend;
        volatile Sandbox sandbox;
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
            } finally {
                if (backend != null) {
                    backend.close();
                }
            }
        }
    }
}
