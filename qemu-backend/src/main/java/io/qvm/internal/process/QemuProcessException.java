package io.qvm.internal.process;

import java.util.Optional;

/**
 * QEMU could not be started, died, or misbehaved. Carries the evidence: how it exited (if it
 * did), and the tails of its stderr and of the guest console, already sanitised. The message
 * includes them, so a log line or a test failure shows why without opening any file.
 */
public final class QemuProcessException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String reason;
    private final transient ExitInfo exit;
    private final String stderrTail;
    private final String consoleTail;

    public QemuProcessException(String reason, ExitInfo exit, String stderrTail, String consoleTail, Throwable cause) {
        super(compose(reason, exit, stderrTail, consoleTail), cause);
        this.reason = reason;
        this.exit = exit;
        this.stderrTail = stderrTail == null ? "" : stderrTail;
        this.consoleTail = consoleTail == null ? "" : consoleTail;
    }

    private static String compose(String reason, ExitInfo exit, String stderr, String console) {
        StringBuilder sb = new StringBuilder(reason);
        if (exit != null) {
            sb.append(" (QEMU ").append(exit.describe()).append(')');
        }
        if (stderr != null && !stderr.isBlank()) {
            sb.append("\n--- QEMU stderr (tail) ---\n").append(stderr.strip());
        }
        if (console != null && !console.isBlank()) {
            sb.append("\n--- guest console (tail) ---\n").append(console.strip());
        }
        return sb.toString();
    }

    /** The short reason, without the tails. */
    public String reason() {
        return reason;
    }

    /** How QEMU exited, if it had exited when this was created. */
    public Optional<ExitInfo> exit() {
        return Optional.ofNullable(exit);
    }

    public String stderrTail() {
        return stderrTail;
    }

    public String consoleTail() {
        return consoleTail;
    }
}
