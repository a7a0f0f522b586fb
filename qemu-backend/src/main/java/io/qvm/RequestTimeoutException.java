package io.qvm;

/** A request overran the configured request deadline; the sandbox that ran it was stopped. */
public class RequestTimeoutException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public RequestTimeoutException(String message) {
        super(message);
    }

    public RequestTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }

    public RequestTimeoutException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(message, cause, consoleTail, stderrTail);
    }
}
