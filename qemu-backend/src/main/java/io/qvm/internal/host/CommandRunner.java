package io.qvm.internal.host;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs a short host command (e.g. {@code qemu-system-x86_64 --version}, {@code sysctl}) with a
 * deadline and returns its output. The process is always gone when {@link #run} returns.
 */
@FunctionalInterface
public interface CommandRunner {

    /** What a finished (or killed) command left behind. */
    record Result(int exitCode, String stdout, String stderr, boolean timedOut) {
        /** True when it exited 0 within the deadline. */
        public boolean ok() {
            return !timedOut && exitCode == 0;
        }
    }

    /**
     * Runs {@code argv} with stdin closed; kills it at the deadline.
     *
     * @throws UncheckedIOException when the program cannot be started (e.g. not found)
     */
    Result run(List<String> argv, Duration deadline);

    /**
     * Runs {@code argv} with {@code stdin} written to its standard input, which is then closed
     * (e.g. a QMP session on {@code -qmp stdio}); kills it at the deadline.
     *
     * @throws UncheckedIOException when the program cannot be started
     * @throws UnsupportedOperationException from a runner that cannot feed input (a test's fake
     *     that never needs it)
     */
    default Result run(List<String> argv, String stdin, Duration deadline) {
        throw new UnsupportedOperationException("this CommandRunner cannot write to the input of " + argv.get(0));
    }

    /** The real thing: {@link ProcessBuilder}, output capped at 1 MiB per stream. */
    static CommandRunner system() {
        return new CommandRunner() {
            @Override
            public Result run(List<String> argv, Duration deadline) {
                return exec(argv, null, deadline);
            }

            @Override
            public Result run(List<String> argv, String stdin, Duration deadline) {
                return exec(argv, stdin, deadline);
            }
        };
    }

    private static Result exec(List<String> argv, String stdin, Duration deadline) {
        Process p;
        try {
            ProcessBuilder pb = new ProcessBuilder(argv);
            if (stdin == null) {
                pb.redirectInput(ProcessBuilder.Redirect.from(nullFile()));
            }
            p = pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + argv.get(0) + ": " + e.getMessage(), e);
        }
        Drain out = new Drain(p.getInputStream());
        Drain err = new Drain(p.getErrorStream());
        out.start();
        err.start();
        if (stdin != null) {
            try (var in = p.getOutputStream()) {
                in.write(stdin.getBytes(StandardCharsets.UTF_8));
            } catch (IOException gone) {
                // it exited before reading its input: its output and status say why
            }
        }
        boolean finished;
        try {
            finished = p.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            finished = false;
        }
        if (!finished) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        int code;
        try {
            code = p.waitFor();
            out.join(2000);
            err.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            code = -1;
        }
        return new Result(code, out.text(), err.text(), !finished);
    }

    private static java.io.File nullFile() {
        return new java.io.File(System.getProperty("os.name", "").startsWith("Windows") ? "NUL" : "/dev/null");
    }

    /** Reads a stream to the end, keeping at most 1 MiB. */
    final class Drain extends Thread {
        private static final int CAP = 1 << 20;
        private final InputStream in;
        private final ByteArrayOutputStream buf = new ByteArrayOutputStream();

        Drain(InputStream in) {
            super("qvm-command-drain");
            setDaemon(true);
            this.in = in;
        }

        @Override
        public void run() {
            byte[] b = new byte[8192];
            try (in) {
                int n;
                while ((n = in.read(b)) >= 0) {
                    synchronized (buf) {
                        if (buf.size() < CAP) {
                            buf.write(b, 0, Math.min(n, CAP - buf.size()));
                        }
                    }
                }
            } catch (IOException ignored) {
                // the process went away; keep what we have
            }
        }

        String text() {
            synchronized (buf) {
                return buf.toString(StandardCharsets.UTF_8);
            }
        }
    }
}
