package io.qvm.transport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * A request to render one document to PNG: a {@link FrameKind#RENDER} frame whose body is the
 * document and whose header says how to render it.
 *
 * <pre>
 *  header field  type     required  meaning
 *  ------------  -------  --------  -----------------------------------------------------------
 *  type          string   yes       "svg" | "pdf"
 *  width         int      no        output width in pixels, 1..{@value #MAX_SIDE}
 *  height        int      no        output height in pixels, 1..{@value #MAX_SIDE}
 *  dpi           int      no        1..{@value #MAX_DPI}; default {@value #DEFAULT_DPI}
 *  page          int      no        1-based page number (PDF), default 1; SVG accepts only 1
 *  background    string   no        "#RRGGBB" | "#RRGGBBAA" | "transparent"; default "#FFFFFF"
 *  body          bytes              the document
 * </pre>
 *
 * Size: give {@code width} and/or {@code height} (the document is scaled to fit, keeping its
 * aspect ratio; with one of them the other follows the aspect ratio), or {@code dpi} (the
 * document's own size in inches × dpi; an SVG's CSS pixel is 1/96 inch, a PDF point 1/72 inch),
 * never both. With neither, the size is the document's own at {@value #DEFAULT_DPI} dpi. Unknown
 * header fields are refused so that a host never silently gets something other than it asked
 * for. The worker checks the resulting size against its limits before rendering.
 *
 * <p>{@code 0} in {@link #width()}, {@link #height()} and {@link #dpi()} means "not given".
 * The document array is not copied.
 *
 * @param type the document format
 * @param document the document bytes (may be empty: the worker answers PARSE_ERROR)
 * @param width output width in pixels, or 0
 * @param height output height in pixels, or 0
 * @param dpi output resolution, or 0 (then {@link #effectiveDpi()} is {@value #DEFAULT_DPI})
 * @param page 1-based page number
 * @param backgroundArgb the background as 0xAARRGGBB, painted under the document
 */
public record RenderRequest(Type type, byte[] document, int width, int height, int dpi, int page,
        int backgroundArgb) {

    /** Largest width or height a request may name (the worker's maxSide is usually lower). */
    public static final int MAX_SIDE = 1 << 16;
    public static final int MAX_DPI = 2400;
    public static final int DEFAULT_DPI = 96;
    public static final int MAX_PAGE = Integer.MAX_VALUE;
    public static final int WHITE = 0xFFFFFFFF;
    public static final int TRANSPARENT = 0x00000000;

    private static final Set<String> FIELDS = Set.of("type", "width", "height", "dpi", "page", "background");

    /** The document formats the worker renders. */
    public enum Type {
        SVG,
        PDF;

        /** The name in the header: {@code svg} or {@code pdf}. */
        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** @throws IllegalArgumentException for anything but {@code svg} or {@code pdf} */
        public static Type fromWireName(String name) {
            for (Type t : values()) {
                if (t.wireName().equals(name)) {
                    return t;
                }
            }
            throw new IllegalArgumentException("type must be \"svg\" or \"pdf\"");
        }
    }

    public RenderRequest {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(document, "document");
        range("width", width, 0, MAX_SIDE);
        range("height", height, 0, MAX_SIDE);
        range("dpi", dpi, 0, MAX_DPI);
        range("page", page, 1, MAX_PAGE);
        if (dpi != 0 && (width != 0 || height != 0)) {
            throw new IllegalArgumentException("give width/height or dpi, not both");
        }
        if (type == Type.SVG && page != 1) {
            throw new IllegalArgumentException("an SVG document has only page 1");
        }
    }

    /** An SVG at its own size, white background. */
    public static RenderRequest svg(byte[] document) {
        return new RenderRequest(Type.SVG, document, 0, 0, 0, 1, WHITE);
    }

    /** Page 1 of a PDF at {@value #DEFAULT_DPI} dpi, white background. */
    public static RenderRequest pdf(byte[] document) {
        return new RenderRequest(Type.PDF, document, 0, 0, 0, 1, WHITE);
    }

    /** The same request fitted into {@code width} × {@code height} (0 = follow the aspect ratio). */
    public RenderRequest withSize(int width, int height) {
        return new RenderRequest(type, document, width, height, 0, page, backgroundArgb);
    }

    public RenderRequest withDpi(int dpi) {
        return new RenderRequest(type, document, 0, 0, dpi, page, backgroundArgb);
    }

    public RenderRequest withPage(int page) {
        return new RenderRequest(type, document, width, height, dpi, page, backgroundArgb);
    }

    /** @param background {@code #RRGGBB}, {@code #RRGGBBAA} or {@code transparent} */
    public RenderRequest withBackground(String background) {
        return new RenderRequest(type, document, width, height, dpi, page, parseBackground(background));
    }

    /** {@link #dpi()}, or {@value #DEFAULT_DPI} when it is not given. */
    public int effectiveDpi() {
        return dpi == 0 ? DEFAULT_DPI : dpi;
    }

    /** Whether the host asked for an output size (then {@link #dpi()} is 0). */
    public boolean hasSize() {
        return width != 0 || height != 0;
    }

    /** The RENDER frame: the header above and the document as body. */
    public Frame toFrame(long requestId) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("type", type.wireName());
        if (width != 0) {
            h.put("width", width);
        }
        if (height != 0) {
            h.put("height", height);
        }
        if (dpi != 0) {
            h.put("dpi", dpi);
        }
        h.put("page", page);
        h.put("background", formatBackground(backgroundArgb));
        return new Frame(FrameKind.RENDER, requestId, h, document);
    }

    /**
     * Reads and validates a RENDER frame.
     *
     * @throws IllegalArgumentException for any missing, unknown or out-of-range field; the
     *     message names the field but never repeats its value
     */
    public static RenderRequest fromFrame(Frame f) {
        if (f.kind() != FrameKind.RENDER) {
            throw new IllegalArgumentException("expected RENDER, got " + f.kind());
        }
        ObjectNode h = f.header();
        for (Iterator<String> it = h.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!FIELDS.contains(name)) {
                throw new IllegalArgumentException("unknown header field (" + FIELDS.size() + " are known: "
                        + String.join(", ", FIELDS.stream().sorted().toList()) + ")");
            }
        }
        JsonNode type = h.get("type");
        if (type == null || !type.isTextual()) {
            throw new IllegalArgumentException("type is missing or not a string");
        }
        JsonNode bg = h.get("background");
        int argb = WHITE;
        if (bg != null) {
            if (!bg.isTextual()) {
                throw new IllegalArgumentException("background is not a string");
            }
            argb = parseBackground(bg.asText());
        }
        return new RenderRequest(Type.fromWireName(type.asText()), f.body(), intField(h, "width", 0),
                intField(h, "height", 0), intField(h, "dpi", 0), intField(h, "page", 1), argb);
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

    private static void range(String name, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in " + min + ".." + max);
        }
    }

    /**
     * Parses {@code #RRGGBB} (opaque), {@code #RRGGBBAA} or {@code transparent} into 0xAARRGGBB.
     *
     * @throws IllegalArgumentException for anything else
     */
    public static int parseBackground(String s) {
        if (s == null) {
            throw new IllegalArgumentException("background is missing");
        }
        if (s.equals("transparent")) {
            return TRANSPARENT;
        }
        if (s.length() != 7 && s.length() != 9 || s.charAt(0) != '#') {
            throw new IllegalArgumentException("background must be #RRGGBB, #RRGGBBAA or transparent");
        }
        for (int i = 1; i < s.length(); i++) {
            if (Character.digit(s.charAt(i), 16) < 0) {
                throw new IllegalArgumentException("background must be #RRGGBB, #RRGGBBAA or transparent");
            }
        }
        int rgb = Integer.parseInt(s.substring(1, 7), 16);
        int alpha = s.length() == 9 ? Integer.parseInt(s.substring(7, 9), 16) : 0xFF;
        return alpha << 24 | rgb;
    }

    /** {@code transparent} for 0, {@code #RRGGBB} when opaque, {@code #RRGGBBAA} otherwise. */
    public static String formatBackground(int argb) {
        if (argb == TRANSPARENT) {
            return "transparent";
        }
        int alpha = argb >>> 24;
        String rgb = String.format(Locale.ROOT, "#%06X", argb & 0xFFFFFF);
        return alpha == 0xFF ? rgb : rgb + String.format(Locale.ROOT, "%02X", alpha);
    }

    @Override
    public String toString() {
        return "RenderRequest[" + type.wireName() + " " + document.length + " bytes width=" + width + " height="
                + height + " dpi=" + dpi + " page=" + page + " background=" + formatBackground(backgroundArgb) + "]";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RenderRequest r && type == r.type && Arrays.equals(document, r.document)
                && width == r.width && height == r.height && dpi == r.dpi && page == r.page
                && backgroundArgb == r.backgroundArgb;
    }

    @Override
    public int hashCode() {
        return Objects.hash(type, Arrays.hashCode(document), width, height, dpi, page, backgroundArgb);
    }
}
