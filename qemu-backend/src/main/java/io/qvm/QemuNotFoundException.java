package io.qvm;

/** No usable QEMU binary; the message names the package or installer to use. */
public class QemuNotFoundException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public QemuNotFoundException(String message) {
        super(message);
    }

    public QemuNotFoundException(String message, Throwable cause) {
        super(message, cause);
    }

    public QemuNotFoundException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(message, cause, consoleTail, stderrTail);
    }
}
