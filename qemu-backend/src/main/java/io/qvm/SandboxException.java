package io.qvm;

/**
 * Root of every failure qvm reports. Unchecked, so a {@code try (Sandbox s = …)} stays readable;
 * each subclass names one way things go wrong and its message says what to do.
 *
 * <p>Failures that involve a guest carry the evidence with them: the tail of the guest console
 * and of QEMU's stderr at the moment of failure ({@link #consoleTail()}, {@link #stderrTail()}),
 * also appended to {@link #getMessage()}.
 */
public class SandboxException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String consoleTail;
    private final String stderrTail;

    public SandboxException(String message) {
        this(message, null, null, null);
    }

    public SandboxException(String message, Throwable cause) {
        this(message, cause, null, null);
    }

    public SandboxException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(withEvidence(message, consoleTail, stderrTail), cause);
        this.consoleTail = consoleTail == null ? "" : consoleTail;
        this.stderrTail = stderrTail == null ? "" : stderrTail;
    }

    /** The last lines of the guest console when the failure happened ("" when there is none). */
    public String consoleTail() {
        return consoleTail;
    }

    /** The last lines of QEMU's stderr when the failure happened ("" when there is none). */
    public String stderrTail() {
        return stderrTail;
    }

    private static String withEvidence(String message, String console, String stderr) {
        StringBuilder sb = new StringBuilder(message);
        if (console != null && !console.isBlank()) {
            sb.append("\n--- guest console (tail) ---\n").append(console.strip());
        }
        if (stderr != null && !stderr.isBlank()) {
            sb.append("\n--- qemu stderr (tail) ---\n").append(stderr.strip());
        }
        return sb.toString();
    }
}
