package io.qvm.protocol;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.protocol.util.ControlChars;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * The codec between the message values ({@link Hello}, {@link Ready}, {@link RenderRequest},
 * {@link RenderResult}, {@link ErrorReply}, {@link WorkerStatus}) and {@link Frame}s: the one
 * place that knows each message's header fields (adr/0003, docs/CONTRACTS.md). The values
 * themselves are plain records; both sides of the wire encode and decode through this class.
 *
 * <p>Every {@code decode} method throws {@link IllegalArgumentException} for a frame of another
 * kind or a missing, unknown, mistyped or out-of-range field; the message names the field but
 * never repeats a value the peer sent.
 *
 * <p>Text the worker sends for people to read is made safe here, where it is decoded, so that no
 * caller sees it raw: READY's {@code version} and each of its {@code capabilities} (at most
 * {@value #MAX_CAPABILITIES} of them) are capped at {@value ControlChars#SHORT_TEXT} characters,
 * ERROR's {@code message} at {@value ControlChars#MESSAGE_TEXT}, and all of them have their
 * control and bidi characters escaped ({@link ControlChars#guestText}). READY's nonce is only
 * compared, never shown, and is kept as sent.
 */
public final class Messages {

    /** The most capabilities a READY is read with; the rest are summed up in one last entry. */
    public static final int MAX_CAPABILITIES = 32;

    private static final Set<String> RENDER_FIELDS = Set.of("type", "width", "height", "dpi", "page", "background");

    private Messages() {
    }

    // ---- HELLO / READY ------------------------------------------------------------------------

    public static Frame toFrame(Hello hello) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("nonce", hello.nonce());
        h.put("protocol", hello.protocol());
        h.set("limits", json(hello.limits()));
        return Frame.of(FrameKind.HELLO, Hello.REQUEST_ID, h);
    }

    /**
     * The worker's decode of HELLO: the nonce must be a non-empty string and the protocol, when
     * given, a 32-bit integer (a HELLO without one reads as protocol -1, which no worker speaks).
     */
    public static Hello hello(Frame f) {
        expect(f, FrameKind.HELLO);
        JsonNode nonce = f.header().get("nonce");
        if (nonce == null || !nonce.isTextual() || nonce.asText().isEmpty()) {
            throw new IllegalArgumentException("HELLO without a nonce (a non-empty string)");
        }
        return new Hello(nonce.asText(), intField(f.header(), "protocol", -1), limits(f.header().get("limits")));
    }

    public static Frame toFrame(Ready ready) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("nonce", ready.nonce());
        h.put("version", ready.version());
        ArrayNode caps = h.putArray("capabilities");
        ready.capabilities().forEach(caps::add);
        return Frame.of(FrameKind.READY, Hello.REQUEST_ID, h);
    }

    public static Ready ready(Frame f) {
        expect(f, FrameKind.READY);
        List<String> caps = new ArrayList<>();
        JsonNode sent = f.header().path("capabilities");
        for (JsonNode c : sent) {
            if (caps.size() == MAX_CAPABILITIES) {
                caps.add("… (" + sent.size() + " capabilities in all)");
                break;
            }
            caps.add(ControlChars.guestText(c.asText(), ControlChars.SHORT_TEXT));
        }
        return new Ready(f.header().path("nonce").asText(""),
                ControlChars.guestText(f.header().path("version").asText(""), ControlChars.SHORT_TEXT), caps);
    }

    /** The limits as the JSON object HELLO carries. */
    public static ObjectNode json(Limits l) {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        n.put("maxRequestBytes", l.maxRequestBytes());
        n.put("maxResponseBytes", l.maxResponseBytes());
        n.put("maxPixels", l.maxPixels());
        n.put("maxSide", l.maxSide());
        n.put("maxPages", l.maxPages());
        n.put("requestTimeoutMillis", l.requestTimeoutMillis());
        return n;
    }

    /** Reads limits from JSON; a missing, non-integer or too large field is refused. */
    public static Limits limits(JsonNode n) {
        return new Limits(
                (int) limit(n, "maxRequestBytes", Integer.MAX_VALUE),
                (int) limit(n, "maxResponseBytes", Integer.MAX_VALUE),
                limit(n, "maxPixels", Long.MAX_VALUE),
                (int) limit(n, "maxSide", Integer.MAX_VALUE),
                (int) limit(n, "maxPages", Integer.MAX_VALUE),
                limit(n, "requestTimeoutMillis", Long.MAX_VALUE));
    }

    // ---- RENDER / RENDER_RESULT ---------------------------------------------------------------

    /** The RENDER frame: the header {@link RenderRequest} documents and the document as body. */
    public static Frame toFrame(RenderRequest r, long requestId) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("type", r.type().wireName());
        if (r.width() != 0) {
            h.put("width", r.width());
        }
        if (r.height() != 0) {
            h.put("height", r.height());
        }
        if (r.dpi() != 0) {
            h.put("dpi", r.dpi());
        }
        h.put("page", r.page());
        h.put("background", RenderRequest.formatBackground(r.backgroundArgb()));
        return new Frame(FrameKind.RENDER, requestId, h, r.document());
    }

    public static RenderRequest renderRequest(Frame f) {
        expect(f, FrameKind.RENDER);
        ObjectNode h = f.header();
        for (Iterator<String> it = h.fieldNames(); it.hasNext(); ) {
            if (!RENDER_FIELDS.contains(it.next())) {
                throw new IllegalArgumentException("unknown header field (" + RENDER_FIELDS.size() + " are known: "
                        + String.join(", ", RENDER_FIELDS.stream().sorted().toList()) + ")");
            }
        }
        JsonNode type = h.get("type");
        if (type == null || !type.isTextual()) {
            throw new IllegalArgumentException("type is missing or not a string");
        }
        JsonNode bg = h.get("background");
        int argb = RenderRequest.WHITE;
        if (bg != null) {
            if (!bg.isTextual()) {
                throw new IllegalArgumentException("background is not a string");
            }
            argb = RenderRequest.parseBackground(bg.asText());
        }
        return new RenderRequest(RenderRequest.Type.fromWireName(type.asText()), f.body(),
                given(h, "width", RenderRequest.MAX_SIDE), given(h, "height", RenderRequest.MAX_SIDE),
                given(h, "dpi", RenderRequest.MAX_DPI), intField(h, "page", 1), argb);
    }

    /** The RENDER_RESULT frame: the header {@link RenderResult} documents and the PNG as body. */
    public static Frame toFrame(RenderResult r, long requestId) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("format", "png");
        h.put("width", r.width());
        h.put("height", r.height());
        h.put("renderMillis", r.renderMillis());
        h.put("outputBytes", r.png().length);
        return new Frame(FrameKind.RENDER_RESULT, requestId, h, r.png());
    }

    public static RenderResult renderResult(Frame f) {
        expect(f, FrameKind.RENDER_RESULT);
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

    /**
     * The host's decode of a RENDER_RESULT: {@link #renderResult(Frame)}, and then the PNG held
     * to what the header claims, what was asked and the limits, before any caller sees it (the
     * worker may be compromised by the document it rendered):
     * <ul>
     *   <li>the PNG's structure is sound, with nothing to inflate but its image data, and that
     *   no larger than its size allows ({@link PngHeader#read});</li>
     *   <li>its IHDR width and height are the header's {@code width} and {@code height};</li>
     *   <li>neither side is above {@link Limits#maxSide()} and width × height is not above
     *   {@link Limits#maxPixels()};</li>
     *   <li>a width or height the request gave is the one delivered (the worker fits the
     *   document into it exactly, {@link RenderRequest}).</li>
     * </ul>
     * So what a caller decodes is bounded: its image data inflates to {@link PngHeader#rawBytes()},
     * its raster is at most {@code maxPixels} × 8 bytes (16-bit RGBA), and the PNG itself is at
     * most the transport's {@code maxResponseBytes}.
     *
     * @throws IllegalArgumentException naming the first check that failed
     */
    public static RenderResult renderResult(Frame f, RenderRequest request, Limits limits) {
        RenderResult r = renderResult(f);
        PngHeader png = PngHeader.read(r.png());
        if (png.width() != r.width() || png.height() != r.height()) {
            throw new IllegalArgumentException("the PNG is " + png.width() + "x" + png.height()
                    + " but the header says " + r.width() + "x" + r.height());
        }
        if (r.width() > limits.maxSide() || r.height() > limits.maxSide()) {
            throw new IllegalArgumentException("the PNG is " + r.width() + "x" + r.height()
                    + ", a side above maxSide " + limits.maxSide());
        }
        if ((long) r.width() * r.height() > limits.maxPixels()) {
            throw new IllegalArgumentException("the PNG is " + r.width() + "x" + r.height() + " = "
                    + (long) r.width() * r.height() + " pixels, above maxPixels " + limits.maxPixels());
        }
        if (request.width() != 0 && r.width() != request.width()
                || request.height() != 0 && r.height() != request.height()) {
            throw new IllegalArgumentException("the PNG is " + r.width() + "x" + r.height() + " but "
                    + (request.width() == 0 ? "?" : request.width()) + "x"
                    + (request.height() == 0 ? "?" : request.height()) + " was asked for");
        }
        return r;
    }

    // ---- ERROR / STATUS_REPLY -----------------------------------------------------------------

    public static Frame toFrame(ErrorReply e) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("code", e.code().name());
        h.put("message", e.message());
        return Frame.of(FrameKind.ERROR, e.requestId(), h);
    }

    public static ErrorReply errorReply(Frame f) {
        expect(f, FrameKind.ERROR);
        return new ErrorReply(f.requestId(), ErrorCode.parse(f.header().path("code").asText(null)),
                ControlChars.guestText(f.header().path("message").asText(""), ControlChars.MESSAGE_TEXT));
    }

    public static Frame toFrame(WorkerStatus s, long requestId) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("wallClockMillis", s.wallClockMillis());
        h.put("random", s.random());
        h.put("requestsServed", s.requestsServed());
        h.put("sessions", s.sessions());
        return Frame.of(FrameKind.STATUS_REPLY, requestId, h);
    }

    public static WorkerStatus workerStatus(Frame f) {
        expect(f, FrameKind.STATUS_REPLY);
        JsonNode h = f.header();
        if (!h.path("wallClockMillis").canConvertToLong() || !h.path("random").isTextual()
                || !h.path("requestsServed").canConvertToLong() || !h.path("sessions").canConvertToLong()) {
            throw new IllegalArgumentException("STATUS_REPLY header lacks wallClockMillis, random, requestsServed "
                    + "or sessions");
        }
        return new WorkerStatus(h.get("wallClockMillis").asLong(), h.get("random").asText(),
                h.get("requestsServed").asLong(), h.get("sessions").asLong());
    }

    // ---- fields -------------------------------------------------------------------------------

    private static void expect(Frame f, FrameKind kind) {
        if (f.kind() != kind) {
            throw new IllegalArgumentException("expected " + kind + ", got " + f.kind());
        }
    }

    private static int intField(ObjectNode h, String name, int absent) {
        JsonNode v = h.get(name);
        if (v == null) {
            return absent;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new IllegalArgumentException(name + " is not a 32-bit integer");
        }
        return v.intValue();
    }

    /** A size field: absent is 0 ("not given"); present, it must be in 1..max. */
    private static int given(ObjectNode h, String name, int max) {
        int v = intField(h, name, 0);
        if (h.has(name) && (v < 1 || v > max)) {
            throw new IllegalArgumentException(name + " must be in 1.." + max);
        }
        return v;
    }

    private static long longField(ObjectNode h, String name) {
        JsonNode v = h.get(name);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new IllegalArgumentException(name + " is missing or not an integer");
        }
        return v.longValue();
    }

    private static long limit(JsonNode n, String name, long max) {
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
