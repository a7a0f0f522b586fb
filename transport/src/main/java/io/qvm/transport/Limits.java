package io.qvm.transport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The limits the host gives the worker in {@link Hello}; the worker enforces every one of them
 * before it does the work, and the host enforces the byte limits on its side too.
 *
 * @param maxRequestBytes largest request body the worker accepts (its frame reader's body limit)
 * @param maxResponseBytes largest response body the worker may send (the host's frame reader limit)
 * @param maxPixels largest output image, width × height
 * @param maxSide largest output width or height
 * @param maxPages largest page count of a document the worker opens
 * @param requestTimeoutMillis the host's deadline for one request; the worker may stop earlier
 */
public record Limits(int maxRequestBytes, int maxResponseBytes, long maxPixels, int maxSide, int maxPages,
        long requestTimeoutMillis) {

    public Limits {
        positive("maxRequestBytes", maxRequestBytes);
        positive("maxResponseBytes", maxResponseBytes);
        positive("maxPixels", maxPixels);
        positive("maxSide", maxSide);
        positive("maxPages", maxPages);
        positive("requestTimeoutMillis", requestTimeoutMillis);
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, was " + value);
        }
    }

    public ObjectNode toJson() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("maxRequestBytes", maxRequestBytes);
        n.put("maxResponseBytes", maxResponseBytes);
        n.put("maxPixels", maxPixels);
        n.put("maxSide", maxSide);
        n.put("maxPages", maxPages);
        n.put("requestTimeoutMillis", requestTimeoutMillis);
        return n;
    }

    /** Reads limits from JSON; a missing or non-numeric field is an {@link IllegalArgumentException}. */
    public static Limits fromJson(JsonNode n) {
        return new Limits(
                (int) field(n, "maxRequestBytes", Integer.MAX_VALUE),
                (int) field(n, "maxResponseBytes", Integer.MAX_VALUE),
                field(n, "maxPixels", Long.MAX_VALUE),
                (int) field(n, "maxSide", Integer.MAX_VALUE),
                (int) field(n, "maxPages", Integer.MAX_VALUE),
                field(n, "requestTimeoutMillis", Long.MAX_VALUE));
    }

    private static long field(JsonNode n, String name, long max) {
        JsonNode v = n == null ? null : n.get(name);
        if (v == null || !v.canConvertToLong() || !v.isIntegralNumber()) {
            throw new IllegalArgumentException("limits." + name + " is missing or not an integer");
        }
        long value = v.longValue();
        if (value > max) {
            throw new IllegalArgumentException("limits." + name + " is " + value + ", above " + max);
        }
        return value;
    }
}
