package io.qvm.transport;

/** A frame that cannot be accepted. Subclasses say why; none of them means the stream is lost. */
public abstract class FrameException extends TransportException {
    private static final long serialVersionUID = 1L;

    protected FrameException(String message) {
        super(message);
    }
}
