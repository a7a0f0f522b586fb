package io.qvm.internal.process;

import java.time.Instant;
import java.util.OptionalInt;

/**
 * How a process ended.
 *
 * <p>The JDK reports a process killed by signal {@code N} on Unix as exit code {@code 128 + N};
 * {@link #signal()} decodes that. A process that itself called {@code exit(137)} looks the same —
 * QEMU exits with 0 or 1, so for QEMU the decoding is reliable.
 *
 * @param exitCode the exit code as the JDK reports it
 * @param exitedAt when the exit was observed (after its output was fully written to the logs)
 */
public record ExitInfo(int exitCode, Instant exitedAt) {

    private static final String[] SIGNAL_NAMES = {
        null, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGKILL",
        "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM"
    };

    /** The signal that killed the process, if the exit code says so (Unix only). */
    public OptionalInt signal() {
        boolean windows = System.getProperty("os.name", "").startsWith("Windows");
        return !windows && exitCode > 128 && exitCode < 128 + 65 ? OptionalInt.of(exitCode - 128) : OptionalInt.empty();
    }

    /** True for exit code 0. */
    public boolean succeeded() {
        return exitCode == 0;
    }

    /** "exited with code 1" or "killed by signal 9 (SIGKILL)". */
    public String describe() {
        OptionalInt s = signal();
        if (s.isPresent()) {
            int n = s.getAsInt();
            String name = n < SIGNAL_NAMES.length && SIGNAL_NAMES[n] != null ? " (" + SIGNAL_NAMES[n] + ")" : "";
            return "killed by signal " + n + name;
        }
        return "exited with code " + exitCode;
    }

    @Override
    public String toString() {
        return describe() + " at " + exitedAt;
    }
}
