package io.qvm;

import java.util.Optional;

/** The sandbox did not become ready: QEMU exited, the boot deadline passed, or the worker's handshake failed. */
public class BootFailedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    private final Integer workerExitStatus;

    public BootFailedException(String message) {
        super(message);
        this.workerExitStatus = null;
    }

    public BootFailedException(String message, Throwable cause) {
        super(message, cause);
        this.workerExitStatus = null;
    }

    public BootFailedException(String message, Throwable cause, String consoleTail, String stderrTail) {
        this(message, cause, consoleTail, stderrTail, null);
    }

    public BootFailedException(String message, Throwable cause, String consoleTail, String stderrTail,
            Integer workerExitStatus) {
        super(message, cause, consoleTail, stderrTail);
        this.workerExitStatus = workerExitStatus;
    }

    /** The worker's exit status when it ended before READY (the guest init reports it), if it did. */
    public Optional<Integer> workerExitStatus() {
        return Optional.ofNullable(workerExitStatus);
    }
}
