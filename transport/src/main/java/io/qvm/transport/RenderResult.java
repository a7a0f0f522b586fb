package io.qvm.transport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.Objects;

/**
 * A rendered image: the {@link FrameKind#RENDER_RESULT} answer to a {@link RenderRequest}.
 *
 * <pre>
 *  header field  type     meaning
 *  ------------  -------  ----------------------------------------------------------------
 *  format        string   "png"
 *  width         int      image width in pixels, ≥ 1
 *  height        int      image height in pixels, ≥ 1
 *  renderMillis  long     time the worker spent on the request (parse + render + encode), ≥ 0
 *  outputBytes   int      length of the body, checked against it
 *  body          bytes    the PNG (starts with the PNG signature)
 * </pre>
 *
 * The PNG array is not copied.
 *
 * @param png the encoded image
 * @param width image width in pixels
 * @param height image height in pixels
 * @param renderMillis worker time for the request
 */
public record RenderResult(byte[] png, int width, int height, long renderMillis) {

    /** The eight bytes every PNG starts with. */
    private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

    public RenderResult {
        Objects.requireNonNull(png, "png");
        if (width < 1 || height < 1) {
            throw new IllegalArgumentException("width and height must be at least 1");
        }
        if (renderMillis < 0) {
            throw new IllegalArgumentException("renderMillis must not be negative");
        }
        if (png.length < PNG_SIGNATURE.length
                || !Arrays.equals(png, 0, PNG_SIGNATURE.length, PNG_SIGNATURE, 0, PNG_SIGNATURE.length)) {
            throw new IllegalArgumentException("the body is not a PNG");
        }
    }

    /** Size of the PNG in bytes. */
    public int outputBytes() {
        return png.length;
    }

    public Frame toFrame(long requestId) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("format", "png");
        h.put("width", width);
        h.put("height", height);
        h.put("renderMillis", renderMillis);
        h.put("outputBytes", png.length);
        return new Frame(FrameKind.RENDER_RESULT, requestId, h, png);
    }

    /** @throws IllegalArgumentException if any header field is missing, mistyped or inconsistent with the body */
    public static RenderResult fromFrame(Frame f) {
        if (f.kind() != FrameKind.RENDER_RESULT) {
            throw new IllegalArgumentException("expected RENDER_RESULT, got " + f.kind());
        }
        ObjectNode h = f.header();
        JsonNode format = h.get("format");
        if (format == null || !"png".equals(format.asText(null))) {
            throw new IllegalArgumentException("format must be \"png\"");
        }
        long outputBytes = longField(h, "outputBytes");
        if (outputBytes != f.body().length) {
            throw new IllegalArgumentException("outputBytes " + outputBytes + " does not match the body's "
                    + f.body().length + " bytes");
        }
        long width = longField(h, "width");
        long height = longField(h, "height");
        if (width > Integer.MAX_VALUE || height > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("width or height is above " + Integer.MAX_VALUE);
        }
        return new RenderResult(f.body(), (int) width, (int) height, longField(h, "renderMillis"));
    }

    private static long longField(ObjectNode h, String name) {
        JsonNode v = h.get(name);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new IllegalArgumentException(name + " is missing or not an integer");
        }
        return v.longValue();
    }

    @Override
    public String toString() {
        return "RenderResult[" + width + "x" + height + " " + png.length + " bytes in " + renderMillis + " ms]";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RenderResult r && Arrays.equals(png, r.png) && width == r.width && height == r.height
                && renderMillis == r.renderMillis;
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(png), width, height, renderMillis);
    }
}
