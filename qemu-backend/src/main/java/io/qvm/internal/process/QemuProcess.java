package io.qvm.internal.process;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.commons.exec.CommandLine;
import org.apache.commons.exec.DefaultExecutor;
import org.apache.commons.exec.ExecuteException;
import org.apache.commons.exec.ExecuteResultHandler;
import org.apache.commons.exec.ExecuteWatchdog;
import org.apache.commons.exec.ProcessDestroyer;
import org.apache.commons.exec.PumpStreamHandler;
import org.apache.commons.exec.ShutdownHookProcessDestroyer;
import org.apache.commons.exec.StreamPumper;

/**
 * One running QEMU, launched with Apache Commons Exec from an argv built elsewhere.
 *
 * <pre>{@code
 * SandboxState state = stateDirectory.create(id, argv.get(0), sockets);
 * QemuProcess qemu = QemuProcess.launcher(argv)          // argv has -pidfile, -serial file:...
 *         .stdout(state.stdoutLog())
 *         .stderr(state.stderrLog())
 *         .console(state.consoleLog())                    // QEMU writes it; we only tail it
 *         .start();
 * state.recordQemu(qemu.handle());
 * qemu.onExit().thenAccept(exit -> log(exit.describe()));
 * ...
 * if (bad) throw qemu.failure("guest did not print READY within 30 s");   // carries both tails
 * qemu.stop(ladder);                                      // idempotent; close() = signals only
 * }</pre>
 *
 * <ul>
 *   <li>QEMU's environment is {@link ChildEnvironment#forQemu()} ({@code LC_ALL=C}), never the
 *       host's, plus what {@link Launcher#environment} adds.
 *   <li>stdin is closed, or reads a file ({@link Launcher#stdin}: a clone's migration stream,
 *       {@code migrate-incoming fd:0}); stdout and stderr are pumped into files, each capped
 *       (16 MiB by default) so a chatty QEMU cannot fill the disk.
 *   <li>{@link #onExit()} completes after QEMU exited <em>and</em> its stdout/stderr were fully
 *       written to the files, so a tail taken then is complete.
 *   <li>If the JVM shuts down (normal exit, SIGTERM/SIGINT) while QEMU runs, a shutdown hook
 *       destroys it (Commons Exec's {@link ShutdownHookProcessDestroyer}); a JVM killed with
 *       SIGKILL leaves it to {@link StaleSandboxReaper}.
 *   <li>Commons Exec waits for the process on a non-daemon thread: a running QEMU keeps the JVM
 *       alive until it is stopped. Close what you start.
 * </ul>
 */
public final class QemuProcess implements AutoCloseable {

    public static final long DEFAULT_MAX_LOG_BYTES = 16L << 20;
    public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(30);
    /** How much of each log goes into a {@link QemuProcessException}. */
    public static final int TAIL_BYTES = 4096;

    private static final System.Logger LOG = System.getLogger(QemuProcess.class.getName());
    private static final ShutdownHookProcessDestroyer JVM_EXIT_DESTROYER = new ShutdownHookProcessDestroyer();

    private final List<String> argv;
    private final Process process;
    private final Path stdoutLog;
    private final Path stderrLog;
    private final Path consoleLog;
    private final CompletableFuture<ExitInfo> exit;
    private final AtomicReference<CompletableFuture<StopReport>> stopping = new AtomicReference<>();

    private QemuProcess(Launcher l, Process process, CompletableFuture<ExitInfo> exit) {
        this.argv = l.argv;
        this.process = process;
        this.stdoutLog = l.stdout;
        this.stderrLog = l.stderr;
        this.consoleLog = l.console;
        this.exit = exit;
    }

    /** A launcher for {@code argv} (argv[0] is the QEMU binary, a path or a name on PATH). */
    public static Launcher launcher(List<String> argv) {
        return new Launcher(argv);
    }

    public long pid() {
        return process.pid();
    }

    public ProcessHandle handle() {
        return process.toHandle();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public List<String> argv() {
        return argv;
    }

    /** Completes when QEMU has exited and its output is in the log files. Never fails. */
    public CompletableFuture<ExitInfo> onExit() {
        return exit.copy();
    }

    /** The exit, if QEMU has exited (and its logs are complete). */
    public Optional<ExitInfo> exitInfo() {
        return Optional.ofNullable(exit.getNow(null));
    }

    public Path stdoutLog() {
        return stdoutLog;
    }

    public Path stderrLog() {
        return stderrLog;
    }

    public Optional<Path> consoleLog() {
        return Optional.ofNullable(consoleLog);
    }

    public String stderrTail(int maxBytes) {
        return LogTail.tail(stderrLog, maxBytes);
    }

    public String consoleTail(int maxBytes) {
        return consoleTail(0, maxBytes);
    }

    /** The console's tail, nothing before byte {@code from} ({@link #consoleBytes()} at some earlier moment). */
    public String consoleTail(long from, int maxBytes) {
        return consoleLog == null ? "" : LogTail.tail(consoleLog, from, maxBytes);
    }

    /** How many bytes the guest console holds now (0 if there is none yet). */
    public long consoleBytes() {
        try {
            return consoleLog == null ? 0 : java.nio.file.Files.size(consoleLog);
        } catch (java.io.IOException e) {
            return 0;
        }
    }

    /**
     * An exception for {@code reason} carrying the evidence: the exit (if QEMU has exited; waits
     * up to one second for the logs to drain when it is exiting) and both log tails.
     */
    public QemuProcessException failure(String reason) {
        return failure(reason, null);
    }

    public QemuProcessException failure(String reason, Throwable cause) {
        ExitInfo info = exit.getNow(null);
        if (info == null && !process.isAlive()) {
            try {
                info = exit.get(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                // report without it
            }
        }
        return new QemuProcessException(reason, info, stderrTail(TAIL_BYTES), consoleTail(TAIL_BYTES), cause);
    }

    /**
     * Runs {@code ladder} once. Later and concurrent calls wait for and return the first call's
     * report (whatever ladder they pass).
     */
    public StopReport stop(StopLadder ladder) {
        Objects.requireNonNull(ladder, "ladder");
        CompletableFuture<StopReport> mine = new CompletableFuture<>();
        if (!stopping.compareAndSet(null, mine)) {
            return stopping.get().join();
        }
        try {
            StopReport report = ladder.run(process.toHandle(), exit);
            mine.complete(report);
            return report;
        } catch (RuntimeException | Error e) {
            mine.completeExceptionally(e);
            throw e;
        }
    }

    /** Stops QEMU with signals only ({@link StopLadder#signalsOnly()}) unless already stopped. */
    @Override
    public void close() {
        StopReport report = stop(StopLadder.signalsOnly());
        if (!report.exited()) {
            LOG.log(Level.WARNING, "QEMU pid {0} survived SIGKILL: {1}", pid(), report);
        }
    }

    @Override
    public String toString() {
        return "QemuProcess[pid " + process.pid() + ", " + exitInfo().map(ExitInfo::describe).orElse("running") + "]";
    }

    /** Configures and starts a {@link QemuProcess}. Every default lives here. */
    public static final class Launcher {
        private final List<String> argv;
        private Path stdout;
        private Path stderr;
        private Path console;
        private Path workingDirectory;
        private Path stdin;
        private final Map<String, String> environment = new TreeMap<>(ChildEnvironment.forQemu());
        private long maxLogBytes = DEFAULT_MAX_LOG_BYTES;
        private Duration startTimeout = DEFAULT_START_TIMEOUT;
        private boolean destroyOnJvmExit = true;

        private Launcher(List<String> argv) {
            Objects.requireNonNull(argv, "argv");
            if (argv.isEmpty() || argv.get(0) == null || argv.get(0).isBlank()) {
                throw new IllegalArgumentException("argv must start with the QEMU binary, got " + argv);
            }
            for (String a : argv) {
                if (a == null || a.indexOf('\0') >= 0) {
                    throw new IllegalArgumentException("argv must not contain null or NUL characters: " + argv);
                }
            }
            this.argv = List.copyOf(argv);
        }

        /** Where QEMU's stdout goes (required). */
        public Launcher stdout(Path file) {
            this.stdout = Objects.requireNonNull(file, "file");
            return this;
        }

        /** Where QEMU's stderr goes (required). */
        public Launcher stderr(Path file) {
            this.stderr = Objects.requireNonNull(file, "file");
            return this;
        }

        /** The console file QEMU itself writes (from {@code -serial file:}); used only for tails. */
        public Launcher console(Path file) {
            this.console = Objects.requireNonNull(file, "file");
            return this;
        }

        public Launcher workingDirectory(Path dir) {
            this.workingDirectory = Objects.requireNonNull(dir, "dir");
            return this;
        }

        /**
         * Sets a variable in QEMU's environment, which otherwise is {@link ChildEnvironment#forQemu()}
         * alone: nothing is inherited from the host.
         */
        public Launcher environment(String name, String value) {
            environment.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /**
         * QEMU's stdin reads {@code file} (opened by this process, so QEMU needs no access to it
         * after dropping privileges), then end of input. Default: stdin is closed at once.
         */
        public Launcher stdin(Path file) {
            this.stdin = Objects.requireNonNull(file, "file");
            return this;
        }

        /** Cap for each of the stdout and stderr files. */
        public Launcher maxLogBytes(long max) {
            if (max < 1024) {
                throw new IllegalArgumentException("maxLogBytes must be >= 1024, got " + max);
            }
            this.maxLogBytes = max;
            return this;
        }

        /** How long to wait for the OS to start the process (not for QEMU to be ready). */
        public Launcher startTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("startTimeout must be positive, got " + timeout);
            }
            this.startTimeout = timeout;
            return this;
        }

        /** Whether a JVM shutdown hook destroys this QEMU (default true). */
        public Launcher destroyOnJvmExit(boolean destroy) {
            this.destroyOnJvmExit = destroy;
            return this;
        }

        /**
         * Starts QEMU and returns once the OS has started it.
         *
         * @throws QemuProcessException if it could not be started (binary missing, not
         *     executable...), with the stderr tail if there is one
         */
        public QemuProcess start() throws QemuProcessException {
            if (stdout == null || stderr == null) {
                throw new IllegalStateException("stdout and stderr log files are required");
            }
            CommandLine command = new CommandLine(argv.get(0));
            for (String arg : argv.subList(1, argv.size())) {
                command.addArgument(arg, false);
            }
            OutputStream out;
            OutputStream err;
            InputStream in = null;
            try {
                Files.createDirectories(stdout.toAbsolutePath().getParent());
                Files.createDirectories(stderr.toAbsolutePath().getParent());
                out = new CappedFileOutputStream(stdout, maxLogBytes);
                err = new CappedFileOutputStream(stderr, maxLogBytes);
            } catch (IOException e) {
                throw new QemuProcessException("cannot create QEMU log files " + stdout + ", " + stderr
                        + ": " + e, null, "", "", e);
            }
            if (stdin != null) {
                try {
                    in = Files.newInputStream(stdin);
                } catch (IOException e) {
                    closeQuietly(out, err);
                    throw new QemuProcessException("cannot open " + stdin + " for QEMU's stdin: " + e, null, "", "", e);
                }
            }
            InputStream input = in;
            CompletableFuture<Process> launched = new CompletableFuture<>();
            CompletableFuture<ExitInfo> exit = new CompletableFuture<>();
            ExecuteWatchdog watchdog = ExecuteWatchdog.builder()
                    .setTimeout(ExecuteWatchdog.INFINITE_TIMEOUT_DURATION).get();
            DefaultExecutor.Builder<?> eb = DefaultExecutor.builder()
                    .setExecuteStreamHandler(new Pumps(out, err, input))
                    .setThreadFactory(r -> {
                        Thread t = new Thread(r, "qvm-qemu-exec");
                        t.setDaemon(true);
                        return t;
                    });
            if (workingDirectory != null) {
                eb.setWorkingDirectory(workingDirectory);
            }
            DefaultExecutor executor = eb.get();
            executor.setExitValues(null); // any exit code is an exit, not an exception
            executor.setWatchdog(watchdog);
            executor.setProcessDestroyer(new CapturingDestroyer(launched, destroyOnJvmExit));
            ExecuteResultHandler handler = new ExecuteResultHandler() {
                @Override
                public void onProcessComplete(int exitValue) {
                    closeQuietly(out, err);
                    closeQuietly(input);
                    exit.complete(new ExitInfo(exitValue, Instant.now()));
                }

                @Override
                public void onProcessFailed(ExecuteException e) {
                    closeQuietly(out, err);
                    closeQuietly(input);
                    Process p = launched.getNow(null);
                    if (p == null) {
                        launched.completeExceptionally(e);
                        return;
                    }
                    LOG.log(Level.DEBUG, "Commons Exec reported a failure after QEMU ran", e);
                    int code = p.isAlive() ? e.getExitValue() : p.exitValue();
                    exit.complete(new ExitInfo(code, Instant.now()));
                }
            };
            try {
                executor.execute(command, environment(), handler);
            } catch (IOException e) {
                closeQuietly(out, err);
                closeQuietly(input);
                throw new QemuProcessException("cannot start QEMU " + argv.get(0) + ": " + e, null,
                        LogTail.tail(stderr, TAIL_BYTES), "", e);
            }
            Process process;
            try {
                process = launched.get(startTimeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause().getCause() != null ? e.getCause().getCause() : e.getCause();
                throw new QemuProcessException("cannot start QEMU '" + argv.get(0) + "': " + cause.getMessage()
                        + " (is QEMU installed and is argv[0] a path or on PATH?)", null,
                        LogTail.tail(stderr, TAIL_BYTES), "", cause);
            } catch (TimeoutException e) {
                watchdog.destroyProcess();
                throw new QemuProcessException("the OS did not start QEMU within " + startTimeout.toMillis() + " ms",
                        null, LogTail.tail(stderr, TAIL_BYTES), "", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                watchdog.destroyProcess();
                throw new QemuProcessException("interrupted while starting QEMU", null, "", "", e);
            }
            LOG.log(Level.DEBUG, "started QEMU pid {0}: {1}", process.pid(), argv);
            return new QemuProcess(this, process, exit);
        }

        /** The complete environment (never null: a null would make Commons Exec inherit the host's). */
        private Map<String, String> environment() {
            return new HashMap<>(environment);
        }

        private static void closeQuietly(java.io.Closeable... streams) {
            for (java.io.Closeable s : streams) {
                if (s == null) {
                    continue;
                }
                try {
                    s.close();
                } catch (IOException e) {
                    LOG.log(Level.DEBUG, "closing a QEMU stream failed", e);
                }
            }
        }
    }

    /**
     * Commons Exec's pumps with 64 KiB buffers (its default is 1 KiB, slow for a migration stream
     * of a whole guest's RAM on stdin) on daemon threads.
     */
    private static final class Pumps extends PumpStreamHandler {
        private static final int BUFFER = 64 << 10;

        Pumps(OutputStream out, OutputStream err, InputStream in) {
            super(out, err, in);
        }

        @Override
        protected Thread createPump(InputStream is, OutputStream os, boolean closeWhenExhausted) {
            Thread t = new Thread(new StreamPumper(is, os, closeWhenExhausted, BUFFER), "qvm-qemu-pump");
            t.setDaemon(true);
            return t;
        }
    }

    /**
     * Commons Exec hands every launched {@link Process} to the executor's {@link ProcessDestroyer}
     * before waiting for it: that is where we learn the {@link Process} (and its pid). Optionally
     * also registers it with the JVM-exit destroyer.
     */
    private static final class CapturingDestroyer implements ProcessDestroyer {
        private final CompletableFuture<Process> launched;
        private final boolean destroyOnJvmExit;

        CapturingDestroyer(CompletableFuture<Process> launched, boolean destroyOnJvmExit) {
            this.launched = launched;
            this.destroyOnJvmExit = destroyOnJvmExit;
        }

        @Override
        public boolean add(Process process) {
            launched.complete(process);
            return !destroyOnJvmExit || JVM_EXIT_DESTROYER.add(process);
        }

        @Override
        public boolean remove(Process process) {
            return !destroyOnJvmExit || JVM_EXIT_DESTROYER.remove(process);
        }

        @Override
        public int size() {
            return launched.isDone() ? 1 : 0;
        }
    }
}
