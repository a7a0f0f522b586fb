package io.qvm.protocol;

/** A frame that cannot be accepted. Subclasses say why; none of them means the stream is lost. */
public abstract class FrameException extends java.io.IOException {
    private static final long serialVersionUID = 1L;

    protected FrameException(String message) {
        super(message);
    }
}
