package io.qvm;

/** The sandbox died while it was in use (QEMU exited or the worker ended); the sandbox is closed and cannot be reused. */
public class SandboxCrashedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public SandboxCrashedException(String message) {
        this(message, null, null, null, null);
    }

    public SandboxCrashedException(String message, Throwable cause) {
        this(message, cause, null, null, null);
    }

    public SandboxCrashedException(String message, Throwable cause, String consoleTail, String stderrTail) {
        this(message, cause, consoleTail, stderrTail, null);
    }

    /** @param workerExitStatus the worker's exit status as the guest init reported it, or null */
    public SandboxCrashedException(String message, Throwable cause, String consoleTail, String stderrTail,
            Integer workerExitStatus) {
        super(message, cause, consoleTail, stderrTail);
        this.workerExitStatus = workerExitStatus;
    }

    private final Integer workerExitStatus;

    /** The worker's exit status, when the guest init reported one before the VM ended. */
    public java.util.Optional<Integer> workerExitStatus() {
        return java.util.Optional.ofNullable(workerExitStatus);
    }

    /**
     * Whether the worker died of running out of memory (exit status {@value #OUT_OF_MEMORY_STATUS}):
     * the same document would do it again, so a pool does not retry it.
     */
    public boolean outOfMemory() {
        return workerExitStatus != null && workerExitStatus == OUT_OF_MEMORY_STATUS;
    }

    /** The worker's exit status on {@link OutOfMemoryError} (renderer-worker's {@code FatalErrors}). */
    public static final int OUT_OF_MEMORY_STATUS = 3;
}
