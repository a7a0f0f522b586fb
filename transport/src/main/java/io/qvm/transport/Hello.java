package io.qvm.transport;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The host's opening message. The worker must answer with a {@link Ready} that carries the same
 * nonce; the host discards every frame before that READY, so nothing left on the port from an
 * earlier session can be taken for an answer.
 */
public record Hello(String nonce, int protocol, Limits limits) {

    /** Request id of the HELLO / READY pair. */
    public static final long REQUEST_ID = 0;

    public Hello {
        Objects.requireNonNull(nonce, "nonce");
        Objects.requireNonNull(limits, "limits");
    }

    /** A HELLO with a fresh 128-bit nonce from {@link SecureRandom}. */
    public static Hello fresh(Limits limits) {
        byte[] n = new byte[16];
        new SecureRandom().nextBytes(n);
        return new Hello(HexFormat.of().formatHex(n), FrameCodec.VERSION, limits);
    }

    public Frame toFrame() {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("nonce", nonce);
        h.put("protocol", protocol);
        h.set("limits", limits.toJson());
        return Frame.of(FrameKind.HELLO, REQUEST_ID, h);
    }

    /** @throws IllegalArgumentException if the frame is not a well-formed HELLO */
    public static Hello fromFrame(Frame f) {
        if (f.kind() != FrameKind.HELLO) {
            throw new IllegalArgumentException("expected HELLO, got " + f.kind());
        }
        String nonce = f.header().path("nonce").asText("");
        if (nonce.isEmpty()) {
            throw new IllegalArgumentException("HELLO without a nonce");
        }
        return new Hello(nonce, f.header().path("protocol").asInt(-1), Limits.fromJson(f.header().get("limits")));
    }
}
