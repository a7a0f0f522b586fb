package io.qvm.protocol;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * One message of the qvm wire protocol: a kind, a request id, a small JSON header and a binary
 * body. See {@link FrameCodec} for the bytes.
 *
 * <p>The body array is not copied: callers hand it over and must not modify it afterwards.
 */
public record Frame(FrameKind kind, long requestId, ObjectNode header, byte[] body) {

    private static final byte[] EMPTY = new byte[0];

    public Frame {
        Objects.requireNonNull(kind, "kind");
        header = header == null ? JsonNodeFactory.instance.objectNode() : header;
        body = body == null ? EMPTY : body;
    }

    public static Frame of(FrameKind kind, long requestId, ObjectNode header) {
        return new Frame(kind, requestId, header, EMPTY);
    }

    public static Frame of(FrameKind kind, long requestId, byte[] body) {
        return new Frame(kind, requestId, null, body);
    }

    @Override
    public String toString() {
        return "Frame[" + kind + " id=" + requestId + " header=" + header + " body=" + body.length + " bytes]";
    }
}
