package io.qvm.protocol;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;

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

        /**
         * The type of a document that does not say: PDF when {@code %PDF-} appears in its first
         * 1024 bytes (as PDF readers accept), else SVG. What {@code qvm render} and {@code qvm
         * serve} decide for a document given without a type.
         */
        public static Type sniff(byte[] doc) {
            byte[] magic = {'%', 'P', 'D', 'F', '-'};
            int end = Math.min(doc.length, 1024) - magic.length;
            for (int i = 0; i <= end; i++) {
                if (java.util.Arrays.equals(doc, i, i + magic.length, magic, 0, magic.length)) {
                    return PDF;
                }
            }
            return SVG;
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
            // ASCII only: Character.digit would also take fullwidth and other scripts' digits
            if (!HexFormat.isHexDigit(s.charAt(i))) {
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
