package io.qvm.protocol;

/**
 * A frame whose prefix checked out but whose content is unusable (the JSON header is not a JSON
 * object, or the kind is unknown). The frame's bytes were consumed; the stream goes on.
 */
public final class FrameCorruptException extends FrameException {
    private static final long serialVersionUID = 1L;

    private final long requestId;

    public FrameCorruptException(long requestId, String message) {
        super(message);
        this.requestId = requestId;
    }

    /** The request id from the frame's prefix (the prefix's checksum held). */
    public long requestId() {
        return requestId;
    }
}
