package io.qvm.cli;

import java.io.PrintWriter;
import java.util.Objects;

/**
 * Progress lines on stderr. On a terminal the current step redraws one line ({@code \r}, erase
 * to end of line) and warnings stay; elsewhere (a pipe, a log file, a test) every step is one
 * plain line prefixed {@code [qvm]}.
 */
public final class Progress {

    private final PrintWriter err;
    private final boolean terminal;
    private boolean lineOpen;

    public Progress(PrintWriter err, boolean terminal) {
        this.err = Objects.requireNonNull(err, "err");
        this.terminal = terminal;
    }

    public boolean terminal() {
        return terminal;
    }

    /** One step. */
    public synchronized void line(String text) {
        String t = text.strip();
        boolean keep = t.contains("falling back") || t.toLowerCase(java.util.Locale.ROOT).contains("warning")
                || t.startsWith("FAILED ");
        if (terminal && !keep) {
            err.print("\r\033[K" + t);
            lineOpen = true;
        } else {
            clear();
            err.println("[qvm] " + t);
        }
        err.flush();
    }

    /** A status that replaces the current line on a terminal; ignored elsewhere. */
    public synchronized void status(String text) {
        if (terminal) {
            err.print("\r\033[K" + text);
            lineOpen = true;
            err.flush();
        }
    }

    /** Ends a redrawn line so the next output starts on a fresh one. */
    public synchronized void done() {
        if (lineOpen) {
            err.println();
            err.flush();
            lineOpen = false;
        }
    }

    private void clear() {
        if (lineOpen) {
            err.print("\r\033[K");
            lineOpen = false;
        }
    }
}
