package io.qvm.worker;

import java.io.PrintStream;
import java.util.Objects;

/**
 * The worker's diagnostics: short lines prefixed {@code worker:} on stderr, which the guest
 * routes to its console (the host keeps the console tail for failure reports).
 *
 * <p>Lines never carry document content or stack traces: the console is read by the host, and a
 * document is untrusted input.
 */
public final class Log {

    private final PrintStream err;

    public Log(PrintStream err) {
        this.err = Objects.requireNonNull(err, "err");
    }

    /** Prints {@code worker: <message>} as one line. */
    public void info(String message) {
        err.println("worker: " + message);
        err.flush();
    }
}
