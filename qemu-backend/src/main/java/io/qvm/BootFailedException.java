package io.qvm;

/** The sandbox did not become ready: QEMU exited, the boot deadline passed, or the worker's handshake failed. */
public class BootFailedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public BootFailedException(String message) {
        super(message);
    }

    public BootFailedException(String message, Throwable cause) {
        super(message, cause);
    }

    public BootFailedException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(message, cause, consoleTail, stderrTail);
    }
}
