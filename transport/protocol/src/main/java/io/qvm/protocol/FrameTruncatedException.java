package io.qvm.protocol;

/** The stream ended inside a frame. The peer is gone or wrote half a frame. */
public final class FrameTruncatedException extends FrameException {
    private static final long serialVersionUID = 1L;

    public FrameTruncatedException(String message) {
        super(message);
    }
}
