package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Limits;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Objects;

/**
 * The session's {@link Limits}, applied before the work that would break them: image size
 * before a raster is allocated, page count before a page is drawn, output bytes while the PNG
 * is being written. Also the fixed structural limits that protect the JVM itself.
 */
public final class LimitChecker {

    /** Deepest element nesting an SVG may have (Batik builds and paints recursively). */
    public static final int MAX_SVG_DEPTH = 200;
    /** Most elements an SVG may expand to, counting each {@code <use>} as a copy of what it references. */
    public static final long MAX_SVG_EXPANDED_ELEMENTS = 200_000;
    /** Deepest chain of SVG documents embedded as {@code data:} images (the outer document is level 0). */
    public static final int MAX_SVG_IMAGE_NESTING = 4;
    /** Most bytes an embedded SVG document may inflate to (svgz), whatever the request's byte limit. */
    public static final int MAX_EMBEDDED_SVG_BYTES = 16 << 20;
    /** Most references to internal DTD entities an SVG may expand ({@code jdk.xml.entityExpansionLimit}). */
    public static final int MAX_SVG_ENTITY_EXPANSIONS = 10_000;
    /** Longest replacement text of one internal entity, general or parameter, in characters. */
    public static final int MAX_SVG_ENTITY_CHARS = 1 << 20;
    /** Most characters all entity expansions of a document may add up to ({@code jdk.xml.totalEntitySizeLimit}). */
    public static final long MAX_SVG_ENTITY_TOTAL_CHARS = 8 << 20;

    private final Limits limits;

    public LimitChecker(Limits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    public Limits limits() {
        return limits;
    }

    /** LIMIT_EXCEEDED unless {@code width} × {@code height} fits maxSide and maxPixels. */
    public void checkImage(double width, double height) throws RenderException {
        if (!Double.isFinite(width) || !Double.isFinite(height) || width < 1 || height < 1) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "output size is not a positive finite number");
        }
        if (width > limits.maxSide() || height > limits.maxSide()) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "output of " + (long) Math.ceil(width) + "x"
                    + (long) Math.ceil(height) + " pixels is above the side limit of " + limits.maxSide());
        }
        if (width * height > limits.maxPixels()) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "output of " + (long) width + "x" + (long) height
                    + " pixels is above the limit of " + limits.maxPixels() + " pixels");
        }
    }

    /**
     * Largest raster image a document may embed (declared width × height, checked before
     * decoding): maxPixels, or what a quarter of the heap holds at 4 bytes a pixel if that is more
     * (a scan drawn smaller than its own resolution is ordinary). For SVG it bounds the distinct
     * raster images of the whole tree of documents together ({@link SvgBudget}).
     */
    public long maxSourceImagePixels() {
        return Math.max(limits.maxPixels(), Runtime.getRuntime().maxMemory() / 16);
    }

    /**
     * Largest intermediate raster a render may need besides its output (a filter primitive's
     * padded source, see {@code SvgCost}): as large as an embedded image may be.
     */
    public long maxIntermediatePixels() {
        return maxSourceImagePixels();
    }

    /**
     * LIMIT_EXCEEDED if an ARGB raster of {@code width} × {@code height} would take more than half
     * the heap: the estimate before the allocation, so the render is refused, not the JVM.
     */
    public void checkRasterFitsHeap(long width, long height) throws RenderException {
        if (4 * width * height > Runtime.getRuntime().maxMemory() / 2) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "an image of " + width + "x" + height
                    + " pixels needs more memory than the worker has");
        }
    }

    /**
     * Most bytes one PDF stream may decode to (PDFBox holds a decoded stream in memory whole): an
     * eighth of the heap. An image may decode to what its declared size needs, which
     * {@link #maxSourceImagePixels()} bounds.
     */
    public long pdfMaxDecodedStreamBytes() {
        return Runtime.getRuntime().maxMemory() / 8;
    }

    /**
     * Most bytes the tables PDFBox builds from a page's declarations may take together (sampled
     * functions' samples, mesh shadings' triangles): a quarter of the heap.
     */
    public long pdfMaxTableBytes() {
        return Runtime.getRuntime().maxMemory() / 4;
    }

    /** LIMIT_EXCEEDED if the document has more pages than maxPages. */
    public void checkPageCount(long pages) throws RenderException {
        if (pages > limits.maxPages()) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "document has " + pages
                    + " pages, above the limit of " + limits.maxPages());
        }
    }

    /** The most PNG bytes a RENDER_RESULT may carry (the frame limit applies to the body; the header has its own). */
    public int maxOutputBytes() {
        return limits.maxResponseBytes();
    }

    /** Memory PDFBox may use for its stream cache: a few times the request, within the heap. */
    public long pdfScratchBytes() {
        long wanted = Math.max(16L << 20, 4L * limits.maxRequestBytes());
        return Math.min(wanted, Math.max(16L << 20, Runtime.getRuntime().maxMemory() / 4));
    }

    /**
     * A sink for the PNG that fails as soon as it holds more than {@link #maxOutputBytes()}, so an
     * oversize image is never fully encoded.
     */
    public BoundedOutput boundedOutput() {
        return new BoundedOutput(maxOutputBytes());
    }

    /** A byte sink with a hard cap; exceeding it throws {@link OutputTooLarge}. */
    public static final class BoundedOutput extends OutputStream {
        private final ByteArrayOutputStream buf = new ByteArrayOutputStream(64 * 1024);
        private final int max;

        BoundedOutput(int max) {
            this.max = max;
        }

        @Override
        public void write(int b) throws IOException {
            ensure(1);
            buf.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            ensure(len);
            buf.write(b, off, len);
        }

        private void ensure(int more) throws OutputTooLarge {
            if ((long) buf.size() + more > max) {
                throw new OutputTooLarge(max);
            }
        }

        public byte[] toByteArray() {
            return buf.toByteArray();
        }
    }

    /** The encoded image went past maxResponseBytes. */
    public static final class OutputTooLarge extends IOException {
        private static final long serialVersionUID = 1L;
        private final int max;

        OutputTooLarge(int max) {
            super("output above " + max + " bytes");
            this.max = max;
        }

        public RenderException toRenderException() {
            return new RenderException(ErrorCode.TOO_LARGE, "encoded image is above the response limit of " + max
                    + " bytes");
        }
    }
}
