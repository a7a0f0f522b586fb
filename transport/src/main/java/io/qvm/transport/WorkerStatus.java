package io.qvm.transport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The worker's answer to {@link FrameKind#STATUS}: facts about the worker process itself, never
 * about a document.
 *
 * @param wallClockMillis the worker's {@code System.currentTimeMillis()} when it answered (inside
 *     gVisor, inside the guest: after a restore from a template this shows whether the guest
 *     clock was set)
 * @param random          {@value #RANDOM_BYTES} bytes the worker read from {@code /dev/urandom}
 *     when it answered, hex; two clones of one template must report different bytes
 * @param requestsServed  requests (ECHO, RENDER, STATUS) this worker process answered before this one
 * @param sessions        HELLOs it accepted (a restored clone has had the template's and its own)
 */
public record WorkerStatus(long wallClockMillis, String random, long requestsServed, long sessions) {

    /** How many random bytes a status carries. */
    public static final int RANDOM_BYTES = 16;

    public WorkerStatus {
        Objects.requireNonNull(random, "random");
        if (random.length() != 2 * RANDOM_BYTES || !random.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
            throw new IllegalArgumentException("random must be " + RANDOM_BYTES + " bytes as hex, got "
                    + random.length() + " characters");
        }
        if (requestsServed < 0 || sessions < 0) {
            throw new IllegalArgumentException("requestsServed and sessions must be >= 0");
        }
    }

    /** A status with {@code randomBytes} hex-encoded. */
    public static WorkerStatus of(long wallClockMillis, byte[] randomBytes, long requestsServed, long sessions) {
        return new WorkerStatus(wallClockMillis, HexFormat.of().formatHex(randomBytes), requestsServed, sessions);
    }

    public Frame toFrame(long requestId) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("wallClockMillis", wallClockMillis);
        h.put("random", random);
        h.put("requestsServed", requestsServed);
        h.put("sessions", sessions);
        return Frame.of(FrameKind.STATUS_REPLY, requestId, h);
    }

    /** @throws IllegalArgumentException if the frame is not a well-formed STATUS_REPLY */
    public static WorkerStatus fromFrame(Frame f) {
        if (f.kind() != FrameKind.STATUS_REPLY) {
            throw new IllegalArgumentException("expected STATUS_REPLY, got " + f.kind());
        }
        JsonNode h = f.header();
        if (!h.path("wallClockMillis").canConvertToLong() || !h.path("random").isTextual()
                || !h.path("requestsServed").canConvertToLong() || !h.path("sessions").canConvertToLong()) {
            throw new IllegalArgumentException("STATUS_REPLY header lacks wallClockMillis, random, requestsServed "
                    + "or sessions");
        }
        return new WorkerStatus(h.get("wallClockMillis").asLong(), h.get("random").asText(),
                h.get("requestsServed").asLong(), h.get("sessions").asLong());
    }
}
