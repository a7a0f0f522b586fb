package io.qvm;

/** The guest image is missing, incomplete, or does not match its checksums; rebuild it with {@code qvm image build}. */
public class ImageException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public ImageException(String message) {
        super(message);
    }

    public ImageException(String message, Throwable cause) {
        super(message, cause);
    }

    public ImageException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(message, cause, consoleTail, stderrTail);
    }
}
