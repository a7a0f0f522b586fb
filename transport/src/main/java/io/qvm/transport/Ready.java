package io.qvm.transport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** The worker's answer to {@link Hello}: the same nonce, its version and what it can do. */
public record Ready(String nonce, String version, List<String> capabilities) {

    public Ready {
        Objects.requireNonNull(nonce, "nonce");
        Objects.requireNonNull(version, "version");
        capabilities = List.copyOf(capabilities);
    }

    public Frame toFrame() {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("nonce", nonce);
        h.put("version", version);
        ArrayNode caps = h.putArray("capabilities");
        capabilities.forEach(caps::add);
        return Frame.of(FrameKind.READY, Hello.REQUEST_ID, h);
    }

    /** @throws IllegalArgumentException if the frame is not a well-formed READY */
    public static Ready fromFrame(Frame f) {
        if (f.kind() != FrameKind.READY) {
            throw new IllegalArgumentException("expected READY, got " + f.kind());
        }
        List<String> caps = new ArrayList<>();
        for (JsonNode c : f.header().path("capabilities")) {
            caps.add(c.asText());
        }
        return new Ready(f.header().path("nonce").asText(""), f.header().path("version").asText(""), caps);
    }
}
