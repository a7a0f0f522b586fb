package io.qvm.worker;

import io.qvm.protocol.RenderRequest;

/**
 * The pixel size of an output image and where the document goes in it, computed from the
 * document's own size and the request, before anything is rendered.
 *
 * <p>With both {@code width} and {@code height} requested the image is exactly that size and
 * the document is scaled to fit and centred (letterboxed); with one of them, the other follows
 * the document's aspect ratio; with {@code dpi} (or nothing) the document's own size is scaled
 * by {@code dpi / unitsPerInch}.
 *
 * @param width image width in pixels (≥ 1)
 * @param height image height in pixels (≥ 1)
 * @param scale document units → pixels
 * @param offsetX left margin of the document in the image, pixels
 * @param offsetY top margin of the document in the image, pixels
 */
public record OutputSize(int width, int height, double scale, double offsetX, double offsetY) {

    /**
     * @param docWidth document width in its own units (CSS px for SVG, points for PDF), finite and positive
     * @param docHeight document height in the same units
     * @param unitsPerInch 96 for SVG, 72 for PDF
     * @throws RenderException LIMIT_EXCEEDED if the size is beyond the limits (checked on the exact
     *     values before they become ints)
     */
    public static OutputSize of(double docWidth, double docHeight, double unitsPerInch, RenderRequest r,
            LimitChecker limits) throws RenderException {
        double w;
        double h;
        double scale;
        double offX = 0;
        double offY = 0;
        if (r.width() != 0 && r.height() != 0) {
            w = r.width();
            h = r.height();
            scale = Math.min(w / docWidth, h / docHeight);
            offX = (w - docWidth * scale) / 2;
            offY = (h - docHeight * scale) / 2;
        } else if (r.width() != 0) {
            scale = r.width() / docWidth;
            w = r.width();
            h = Math.max(1, Math.round(docHeight * scale));
        } else if (r.height() != 0) {
            scale = r.height() / docHeight;
            h = r.height();
            w = Math.max(1, Math.round(docWidth * scale));
        } else {
            scale = r.effectiveDpi() / unitsPerInch;
            w = Math.max(1, Math.round(docWidth * scale));
            h = Math.max(1, Math.round(docHeight * scale));
        }
        limits.checkImage(w, h);
        return new OutputSize((int) w, (int) h, scale, offX, offY);
    }
}
