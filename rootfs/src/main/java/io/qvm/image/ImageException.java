package io.qvm.image;

/**
 * A failure of the image build. The message says what went wrong and, where there is one, what
 * to do about it (a command to run, a flag to pass).
 */
public class ImageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ImageException(String message) {
        super(message);
    }

    public ImageException(String message, Throwable cause) {
        super(message, cause);
    }
}
