package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.util.HashSet;
import java.util.Set;

/**
 * What one render may spend across its whole tree of documents — the request's SVG and every SVG
 * it embeds as a {@code data:} image, at any depth — so that splitting a document into embedded
 * pieces buys no extra room:
 * <ul>
 *   <li>elements, each {@code <use>} counted as a copy of what it references, and each embedded
 *       document counted again every time it is drawn ({@link LimitChecker#MAX_SVG_EXPANDED_ELEMENTS});</li>
 *   <li>declared pixels of distinct embedded raster images ({@link LimitChecker#maxSourceImagePixels()}):
 *       the same image drawn twice is decoded once, and counted once;</li>
 *   <li>bytes of embedded SVG documents once decoded and inflated (svgz), or the characters their
 *       text and attributes expand to (entities) if more: what one request may carry
 *       ({@code maxRequestBytes}), at most {@link LimitChecker#MAX_EMBEDDED_SVG_BYTES}.</li>
 * </ul>
 * One instance per render; not thread-safe (a render runs on one thread).
 */
final class SvgBudget {

    private long elementsLeft = LimitChecker.MAX_SVG_EXPANDED_ELEMENTS;
    private long pixelsLeft;
    private long embeddedBytesLeft;
    private final Set<String> chargedImages = new HashSet<>();

    SvgBudget(LimitChecker limits) {
        this(limits.maxSourceImagePixels(),
                Math.min(limits.limits().maxRequestBytes(), LimitChecker.MAX_EMBEDDED_SVG_BYTES));
    }

    SvgBudget(long maxImagePixels, long maxEmbeddedBytes) {
        this.pixelsLeft = maxImagePixels;
        this.embeddedBytesLeft = maxEmbeddedBytes;
    }

    /** Spends {@code n} elements; LIMIT_EXCEEDED once the tree holds more than the limit. */
    void chargeElements(long n) throws RenderException {
        elementsLeft -= Math.min(n, LimitChecker.MAX_SVG_EXPANDED_ELEMENTS + 1);
        if (elementsLeft < 0) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "SVG expands to more than "
                    + LimitChecker.MAX_SVG_EXPANDED_ELEMENTS + " elements (through <use> and embedded SVG images)");
        }
    }

    /**
     * Spends the pixels of the raster image {@code url} unless it was charged before.
     *
     * @return false if the tree's images would go above the limit (nothing is spent then)
     */
    boolean chargeImage(String url, long pixels) {
        if (chargedImages.contains(url)) {
            return true;
        }
        if (pixels > pixelsLeft) {
            return false;
        }
        pixelsLeft -= pixels;
        chargedImages.add(url);
        return true;
    }

    /** The most bytes the next embedded SVG document may decode to. */
    long embeddedBytesLeft() {
        return embeddedBytesLeft;
    }

    /** Spends {@code n} bytes of embedded SVG; {@code n} must not exceed {@link #embeddedBytesLeft()}. */
    void chargeEmbeddedBytes(long n) {
        embeddedBytesLeft -= n;
    }
}
