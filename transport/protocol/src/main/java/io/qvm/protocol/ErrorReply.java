package io.qvm.protocol;

import java.util.Objects;

/**
 * The body-less {@link FrameKind#ERROR} answer to a request. The message is short, written by the
 * worker, and never echoes input or carries a stack trace.
 */
public record ErrorReply(long requestId, ErrorCode code, String message) {

    public ErrorReply {
        Objects.requireNonNull(code, "code");
        message = message == null ? "" : message;
    }


}
