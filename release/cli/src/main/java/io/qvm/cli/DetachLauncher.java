package io.qvm.cli;

import io.qvm.admin.SandboxRecord;
import io.qvm.admin.SandboxStates;
import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.cli.control.ReadyFile;
import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.Retry;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * {@code qvm up --detach}: starts {@code java … io.qvm.cli.QvmCli up --supervise <handle>} as a
 * detached process (in a session of its own: {@link Detach}; stdin from the null device, stdout and
 * stderr appended to {@code supervisor.log}, which the supervisor then writes through a
 * {@link RotatingLog}: 1 MiB, one {@code .1} kept), shows the supervisor's progress lines from that log
 * while it boots the sandbox, and returns once the supervisor wrote {@code ready.json} — see
 * {@link Launch} for the files. If the supervisor dies first, its {@code failed.json} (exit code
 * and message) and the log's tail are reported; if the deadline passes (or this command is
 * interrupted), the supervisor is stopped by {@link #stopSupervisor} — asked through its launch
 * directory, never by TerminateProcess — and the boot counts as failed.
 */
final class DetachLauncher {

    private static final Duration POLL = Duration.ofMillis(200);
    /**
     * How long a supervisor asked to stop has to exit (and again after SIGTERM, on POSIX): its
     * interrupted boot's release ({@link Launch#STOP_GRACE}), then its shutdown hook, whose pool
     * may wait a minute for a sandbox it is starting.
     */
    static final Duration STOP_DEADLINE = Duration.ofMinutes(3);

    private final CliContext ctx;
    private final DirOptions dirs;
    private final SandboxOptions sandboxOptions;
    private final Progress progress;
    private final List<String> sessionArgs;

    /** @param sessionArgs the session's own options for the supervisor ({@code --reuse}, {@code --idle-timeout}, …) */
    DetachLauncher(CliContext ctx, DirOptions dirs, SandboxOptions sandboxOptions, List<String> sessionArgs,
            Progress progress) {
        this.ctx = ctx;
        this.dirs = dirs;
        this.sandboxOptions = sandboxOptions;
        this.sessionArgs = List.copyOf(sessionArgs);
        this.progress = progress;
    }

    int launch(Duration wait, PrintWriter out, boolean json) throws IOException, InterruptedException {
        Path stateRoot = ctx.stateRoot(dirs.stateDir);
        String handle = SandboxStates.newId();
        Path launchDir = Launch.create(stateRoot, handle);
        Path log = launchDir.resolve(Launch.LOG);
        Files.createFile(log);
        List<String> cmd = command(handle, log);
        ProcessBuilder pb = new ProcessBuilder(cmd)
                .redirectInput(ProcessBuilder.Redirect.from(nullDevice()))
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().putAll(ctx.env()); // QVM_RUNTIME_DIR, QVM_CACHE, QVM_QEMU… as this command saw them
        progress.line("starting a detached supervisor (log: " + log + ")");
        Process p = pb.start();
        boolean[] settled = {false};
        Thread hook = new Thread(() -> {
            synchronized (settled) {
                if (!settled[0]) {
                    try {
                        System.err.println("qvm: interrupted: stopping the detached supervisor (pid " + p.pid()
                                + ") before it is ready");
                        String how = stopSupervisor(p.toHandle(), launchDir, POSIX, STOP_DEADLINE);
                        System.err.println("qvm: interrupted: " + how);
                    } catch (InterruptedException ignored) {
                        Thread.currentThread().interrupt();
                    }
                    if (!p.isAlive()) {
                        FileTrees.deleteQuietly(launchDir);
                    }
                }
            }
        }, "qvm-detach-interrupt");
        Runtime.getRuntime().addShutdownHook(hook);
        Retry retry = Retry.until(wait, POLL, POLL, p::isAlive);
        boolean stopped = false; // asked to stop already (--wait passed)
        try (FileChannel logChannel = FileChannel.open(log, StandardOpenOption.READ)) {
            LineFollower follower = new LineFollower(logChannel);
            while (true) {
                follower.poll(this::echo);
                Optional<ReadyFile> ready = ReadyFile.read(launchDir);
                if (ready.isPresent()) {
                    follower.poll(this::echo);
                    progress.done();
                    ReadyFile r = ready.get();
                    Path stateDir = stateRoot.resolve("sandboxes").resolve(r.id());
                    Output.emit(out, UpReport.of(r, stateDir.toString()), json);
                    return ExitCode.OK.code();
                }
                if (!retry.peerAlive()) {
                    follower.poll(this::echo);
                    progress.done();
                    throw died(p.exitValue(), launchDir, log);
                }
                if (retry.expired()) {
                    progress.done();
                    String how = stopSupervisor(p.toHandle(), launchDir, POSIX, STOP_DEADLINE);
                    stopped = true;
                    throw new CliException(ExitCode.BOOT_FAILED, "BOOT_TIMEOUT", "the sandbox was not ready within "
                            + wait.toSeconds() + " s; " + how + ". Supervisor log (tail):\n"
                            + SandboxRecord.tail(log, 4096), "raise --wait or --boot-timeout; qvm doctor checks the host",
                            null);
                }
                retry.pause("waiting for the detached supervisor to be ready");
            }
        } finally {
            synchronized (settled) {
                settled[0] = true;
            }
            // Any other way out (an I/O error, an interrupt) leaves a supervisor nobody waits
            // for: it is asked to stop too. Its directory goes only once it is gone (or ready:
            // then it no longer needs it), else it keeps the stop request.
            boolean ready = ReadyFile.read(launchDir).isPresent();
            if (!ready && !stopped && p.isAlive()) {
                try {
                    stopSupervisor(p.toHandle(), launchDir, POSIX, STOP_DEADLINE);
                } catch (InterruptedException again) {
                    Thread.currentThread().interrupt();
                }
            }
            if (ready || !p.isAlive()) {
                FileTrees.deleteQuietly(launchDir);
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs
            }
        }
    }

    private static final boolean POSIX = !OwnerStop.windows(System.getProperty("os.name", ""));

    /**
     * Stops a detached supervisor that is not ready: writes {@link Launch#STOP} into its launch
     * directory, which the supervisor watches ({@link Launch.StopWatch}) and answers by exiting,
     * its shutdown hook stopping what it was booting. Should it have become ready meanwhile, it is
     * stopped as {@code qvm down} stops a running one: GOODBYE on its control socket. Only on POSIX,
     * and only after {@code deadline} without an exit, SIGTERM (the same hook) and then SIGKILL; on
     * Windows it is never ended any other way, because {@link ProcessHandle#destroy()} there is
     * TerminateProcess, which skips the hook and leaves its QEMU running.
     *
     * @param posix whether {@code destroy()} is SIGTERM here (false on Windows; a test's seam)
     * @return what was done, for the message: "its supervisor (pid N) stopped …"
     */
    static String stopSupervisor(ProcessHandle p, Path launchDir, boolean posix, Duration deadline)
            throws InterruptedException {
        try {
            Launch.requestStop(launchDir);
        } catch (IOException gone) {
            // no launch directory: the supervisor stops for that too (Launch.StopWatch)
        }
        boolean goodbye = false;
        long end = System.nanoTime() + deadline.toNanos();
        while (p.isAlive() && System.nanoTime() - end < 0) {
            Optional<ReadyFile> ready = goodbye ? Optional.empty() : ReadyFile.read(launchDir);
            if (ready.isPresent()) {
                goodbye = true; // it got ready just as we gave up: stop it the way qvm down does
                try (io.qvm.cli.control.ControlClient c = io.qvm.cli.control.ControlClient.connect(ready.get())) {
                    c.goodbye(DownCommand.GOODBYE_DEADLINE);
                } catch (IOException unanswered) {
                    // wait for the deadline, then as below
                }
            }
            OwnerStop.waitForExit(p, POLL);
        }
        String how = goodbye ? "GOODBYE on its control socket (it became ready just then)"
                : "a stop request in its launch directory";
        if (!p.isAlive()) {
            return "its supervisor (pid " + p.pid() + ") was stopped by " + how;
        }
        if (!posix) {
            return "its supervisor (pid " + p.pid() + ") did not stop within " + deadline.toSeconds() + " s of "
                    + how + ", and on Windows qvm ends it no other way (TerminateProcess would skip its shutdown "
                    + "hook and leave its QEMU running): " + (goodbye ? "run qvm down --all"
                    : "it stops by itself once it sees the request; else run qvm down --all");
        }
        p.destroy(); // SIGTERM: the same shutdown hook
        if (OwnerStop.waitForExit(p, deadline)) {
            return "its supervisor (pid " + p.pid() + ") did not stop within " + deadline.toSeconds() + " s of " + how
                    + ", and was sent SIGTERM";
        }
        p.destroyForcibly();
        OwnerStop.waitForExit(p, deadline);
        return "its supervisor (pid " + p.pid() + ") did not stop on " + how + " or SIGTERM and was killed; qvm down "
                + "--all reaps what it left";
    }

    private List<String> command(String handle, Path log) {
        List<String> cmd = new ArrayList<>(Detach.system().prefix());
        cmd.add(ctx.javaCommand());
        String opts = ctx.env().get("QVM_JAVA_OPTS");
        if (opts != null && !opts.isBlank()) {
            cmd.addAll(List.of(opts.strip().split("\\s+")));
        }
        cmd.add("-D" + RotatingLog.PROPERTY + "=" + log); // capped and rotated: RotatingLog
        cmd.add("-cp");
        cmd.add(ctx.classPath());
        cmd.add(QvmCli.class.getName());
        cmd.add("up");
        cmd.add("--supervise");
        cmd.add(handle);
        cmd.addAll(dirs.toArgs(ctx));
        cmd.addAll(sandboxOptions.toArgs());
        cmd.addAll(sessionArgs);
        return cmd;
    }

    /** The failure of a supervisor that exited before ready, from its failed.json or its exit code. */
    private static CliException died(int exitValue, Path launchDir, Path log) {
        String tail = SandboxRecord.tail(log, 4096);
        try {
            JsonNode f = Output.JSON.readTree(launchDir.resolve(Launch.FAILED).toFile());
            ExitCode code = ExitCode.of(f.path("exitCode").asInt(exitValue));
            return new CliException(code, f.path("code").asText(null), f.path("message").asText("the supervisor failed"),
                    f.path("hint").isTextual() ? f.path("hint").asText() : null, null);
        } catch (IOException | RuntimeException noFile) {
            ExitCode code = exitValue == 0 ? ExitCode.BOOT_FAILED : ExitCode.of(exitValue);
            return new CliException(code == ExitCode.ERROR ? ExitCode.BOOT_FAILED : code, "SUPERVISOR_DIED",
                    "the supervisor exited with code " + exitValue + " before the sandbox was ready. Its log (tail):\n"
                            + tail, null, null);
        }
    }

    /** Echoes the supervisor's progress lines; its other output (JVM logging) stays in the log. */
    private void echo(String line) {
        if (line.startsWith("[qvm] ")) {
            progress.line(line.substring(6));
        }
    }

    /**
     * How the supervisor leaves the terminal's session, so that closing the terminal (SIGHUP) or
     * its job control does not reach it. Java cannot call {@code setsid(2)} itself, so a small
     * program execs the supervisor in place (same pid, so its exit code still reaches us), the
     * first found of:
     * <ol>
     * <li>{@code setsid -w} (util-linux, every Linux): a new session; {@code -w} waits should it
     *     have to fork.</li>
     * <li>{@code /usr/bin/perl -e 'POSIX::setsid(); exec …'}: macOS has no {@code setsid(1)}, but
     *     ships perl with its POSIX module. A child started by {@link ProcessBuilder} is never a
     *     process-group leader, so {@code setsid()} succeeds; if it fails, perl exits 255 with the
     *     reason in the supervisor log. Untested on a real Mac: proven on Linux with setsid hidden.</li>
     * <li>{@code nohup}: no new session, but SIGHUP ignored — and a JVM started with SIGHUP
     *     ignored installs no handler for it, so closing the terminal does not stop it.</li>
     * <li>nothing (no POSIX host, e.g. Windows): the supervisor is started as it is.</li>
     * </ol>
     *
     * @param prefix the argv that goes before the supervisor's own ({@code java …})
     * @param how    a few words for the progress line
     */
    record Detach(List<String> prefix, String how) {
        /** The perl program: a new session, then exec the rest of the arguments (no shell). */
        static final String PERL_SETSID = "use POSIX (); POSIX::setsid() or die \"qvm: setsid: $!\\n\"; "
                + "exec { $ARGV[0] } @ARGV or die \"qvm: cannot run $ARGV[0]: $!\\n\";";

        Detach {
            prefix = List.copyOf(prefix);
        }

        static Detach system() {
            return find(p -> Files.isRegularFile(p) && Files.isExecutable(p));
        }

        /** The first way that {@code isExecutable} allows (the seam: a test hides setsid). */
        static Detach find(java.util.function.Predicate<Path> isExecutable) {
            for (String dir : new String[] {"/usr/bin", "/bin"}) {
                Path p = Path.of(dir, "setsid");
                if (isExecutable.test(p)) {
                    return new Detach(List.of(p.toString(), "-w"), "a new session (setsid)");
                }
            }
            Path perl = Path.of("/usr/bin/perl");
            if (isExecutable.test(perl)) {
                return new Detach(List.of(perl.toString(), "-e", PERL_SETSID, "--"), "a new session (perl setsid)");
            }
            for (String dir : new String[] {"/usr/bin", "/bin"}) {
                Path p = Path.of(dir, "nohup");
                if (isExecutable.test(p)) {
                    return new Detach(List.of(p.toString()), "SIGHUP ignored (nohup; no setsid or perl here)");
                }
            }
            return new Detach(List.of(), "no new session (no setsid, perl or nohup here)");
        }
    }

    private static File nullDevice() {
        return new File(System.getProperty("os.name", "").startsWith("Windows") ? "NUL" : "/dev/null");
    }

    /** Reads complete lines appended to a file since the last poll. */
    static final class LineFollower {
        private final FileChannel ch;
        private final StringBuilder partial = new StringBuilder();
        private long position;

        LineFollower(FileChannel ch) {
            this.ch = ch;
        }

        void poll(java.util.function.Consumer<String> lines) throws IOException {
            ByteBuffer buf = ByteBuffer.allocate(8192);
            while (true) {
                buf.clear();
                int n = ch.read(buf, position);
                if (n <= 0) {
                    return;
                }
                position += n;
                partial.append(new String(buf.array(), 0, n, StandardCharsets.UTF_8));
                int nl;
                while ((nl = partial.indexOf("\n")) >= 0) {
                    lines.accept(partial.substring(0, nl).stripTrailing());
                    partial.delete(0, nl + 1);
                }
            }
        }
    }
}
