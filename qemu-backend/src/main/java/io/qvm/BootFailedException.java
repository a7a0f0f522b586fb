package io.qvm;

import java.util.Optional;

/** The sandbox did not become ready: QEMU exited, the boot deadline passed, or the worker's handshake failed. */
public class BootFailedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    private final Integer workerExitStatus;
    private boolean guestStalled;

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

    /** Marks a boot whose guest kernel stopped making progress (no console output) before the init ran runsc. */
    public BootFailedException guestStalled(boolean stalled) {
        this.guestStalled = stalled;
        return this;
    }

    /** Whether the guest kernel stalled before the init ran runsc (the VM was stopped). */
    public boolean guestStalled() {
        return guestStalled;
    }

    /** The worker's exit status when it ended before READY (the guest init reports it), if it did. */
    public Optional<Integer> workerExitStatus() {
        return Optional.ofNullable(workerExitStatus);
    }
}
