package io.qvm.release;

/**
 * A release step that failed, with its evidence as the message: what was expected, what was found
 * (both hashes of a file that differs, the problem a verification found, the boot's error). The
 * orchestrator records it as that step's {@link ReleaseStep} and publishes nothing.
 */
public final class ReleaseException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ReleaseException(String evidence) {
        super(evidence);
    }

    public ReleaseException(String evidence, Throwable cause) {
        super(evidence, cause);
    }
}
