package io.qvm;

/** The accelerator that was asked for cannot be used here; the message names the probe layer that failed and the fix. */
public class AcceleratorUnavailableException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public AcceleratorUnavailableException(String message) {
        super(message);
    }

    public AcceleratorUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }

    public AcceleratorUnavailableException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(message, cause, consoleTail, stderrTail);
    }
}
