package io.qvm.protocol;

/**
 * A frame whose prefix is valid (magic, version, checksum) but whose header or body length is
 * above the reader's limit. Nothing of that size was allocated; the reader skipped the frame's
 * bytes and can go on with the next frame. The request id is known, so the receiver can answer
 * the request with a typed error.
 */
public final class FrameTooLargeException extends FrameException {
    private static final long serialVersionUID = 1L;

    private final FrameKind kind;
    private final long requestId;
    private final long declaredBytes;
    private final long limitBytes;

    public FrameTooLargeException(FrameKind kind, long requestId, String part, long declaredBytes, long limitBytes) {
        super(kind + " frame " + requestId + " declares a " + part + " of " + declaredBytes
                + " bytes, above the limit of " + limitBytes + " bytes (nothing of that size was allocated;"
                + " raise the limit if such frames are legitimate)");
        this.kind = kind;
        this.requestId = requestId;
        this.declaredBytes = declaredBytes;
        this.limitBytes = limitBytes;
    }

    public FrameKind kind() {
        return kind;
    }

    public long requestId() {
        return requestId;
    }

    public long declaredBytes() {
        return declaredBytes;
    }

    public long limitBytes() {
        return limitBytes;
    }
}
