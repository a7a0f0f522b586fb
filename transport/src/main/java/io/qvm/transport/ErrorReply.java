package io.qvm.transport;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
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

    public Frame toFrame() {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("code", code.name());
        h.put("message", message);
        return Frame.of(FrameKind.ERROR, requestId, h);
    }

    public static ErrorReply fromFrame(Frame f) {
        if (f.kind() != FrameKind.ERROR) {
            throw new IllegalArgumentException("expected ERROR, got " + f.kind());
        }
        return new ErrorReply(f.requestId(), ErrorCode.parse(f.header().path("code").asText(null)),
                f.header().path("message").asText(""));
    }
}
