package io.qvm;

/** The sandbox died while it was in use (QEMU exited or the worker ended); the sandbox is closed and cannot be reused. */
public class SandboxCrashedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public SandboxCrashedException(String message) {
        super(message);
    }

    public SandboxCrashedException(String message, Throwable cause) {
        super(message, cause);
    }

    public SandboxCrashedException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(message, cause, consoleTail, stderrTail);
    }
}
