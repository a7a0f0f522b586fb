package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.util.List;
import org.apache.pdfbox.Loader;
import org.apache.pdfbox.contentstream.operator.Operator;
import org.apache.pdfbox.cos.COSBase;
import org.apache.pdfbox.io.MemoryUsageSetting;
import org.apache.pdfbox.io.RandomAccessRead;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.pdmodel.PDPage;
import org.apache.pdfbox.pdmodel.common.PDRectangle;
import org.apache.pdfbox.pdmodel.encryption.InvalidPasswordException;
import org.apache.pdfbox.pdmodel.graphics.image.PDImage;
import org.apache.pdfbox.rendering.PDFRenderer;
import org.apache.pdfbox.rendering.PageDrawer;
import org.apache.pdfbox.rendering.PageDrawerParameters;
import org.apache.pdfbox.rendering.RenderDestination;

/**
 * One PDF page → PNG with Apache PDFBox 3.
 *
 * <ul>
 *   <li>the document is read from the request's bytes; PDFBox's stream cache is main-memory only
 *       and capped ({@link LimitChecker#pdfScratchBytes()}), so nothing is written to disk and a
 *       document cannot inflate its scratch space without bound;</li>
 *   <li>page count above maxPages: LIMIT_EXCEEDED, before any page is touched; a page outside
 *       the document: BAD_REQUEST;</li>
 *   <li>the output size is the page's crop box (rotated) × dpi / 72, checked before the raster
 *       exists;</li>
 *   <li>the watchdog's cancellation is checked before every content-stream operator and on every
 *       read of the page's content ({@link CancellableRead}), so a slow page stops at once;</li>
 *   <li>an image whose declared size is above {@link LimitChecker#maxSourceImagePixels()} is
 *       refused (LIMIT_EXCEEDED) before PDFBox decodes it, and so is every other cost PDFBox would
 *       size from the page's declarations: masks, codec headers, decoded streams, sampled
 *       functions, meshes ({@link PdfPreflight}, before drawing; inline images as they are met);</li>
 *   <li>encrypted documents that need a password: UNSUPPORTED; anything PDFBox cannot read:
 *       PARSE_ERROR.</li>
 * </ul>
 * PDFBox opens no URLs and no files for rendering; the only files it reads are the JRE's and the
 * system's fonts (for non-embedded fonts).
 */
final class PdfRenderer {

    /** PDF points per inch. */
    static final double UNITS_PER_INCH = 72;

    Rendered render(RenderRequest request, LimitChecker limits, Cancellation cancel) throws RenderException {
        if (request.document().length == 0) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "empty document");
        }
        try (PDDocument doc = load(request.document(), limits)) {
            int pages = doc.getNumberOfPages();
            limits.checkPageCount(pages);
            if (pages < 1) {
                throw new RenderException(ErrorCode.PARSE_ERROR, "PDF has no pages");
            }
            if (request.page() > pages) {
                throw new RenderException(ErrorCode.BAD_REQUEST, "page " + request.page() + " requested, the PDF has "
                        + pages);
            }
            cancel.check();
            int index = request.page() - 1;
            PDPage page = doc.getPage(index);
            PDRectangle crop = page.getCropBox();
            boolean quarterTurn = page.getRotation() % 180 != 0;
            double w = quarterTurn ? crop.getHeight() : crop.getWidth();
            double h = quarterTurn ? crop.getWidth() : crop.getHeight();
            if (!(w > 0) || !(h > 0) || !Double.isFinite(w) || !Double.isFinite(h)) {
                throw new RenderException(ErrorCode.PARSE_ERROR, "PDF page has an empty or invalid crop box");
            }
            OutputSize out = OutputSize.of(w, h, UNITS_PER_INCH, request, limits);
            PdfPreflight.check(page, limits);
            cancel.check();
            boolean opaque = request.backgroundArgb() >>> 24 == 0xFF;
            BufferedImage image = new BufferedImage(out.width(), out.height(),
                    opaque ? BufferedImage.TYPE_INT_RGB : BufferedImage.TYPE_INT_ARGB);
            Graphics2D g = image.createGraphics();
            try {
                g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
                g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
                g.setRenderingHint(RenderingHints.KEY_RENDERING, RenderingHints.VALUE_RENDER_QUALITY);
                g.setRenderingHint(RenderingHints.KEY_INTERPOLATION, RenderingHints.VALUE_INTERPOLATION_BICUBIC);
                // PDFBox clears the page area with the background colour before drawing the page.
                Color background = new Color(request.backgroundArgb(), true);
                g.setBackground(background);
                g.clearRect(0, 0, out.width(), out.height());
                g.translate(out.offsetX(), out.offsetY());
                new CancellableRenderer(doc, cancel, limits).renderPageToGraphics(index, g, (float) out.scale(),
                        (float) out.scale(), RenderDestination.EXPORT);
            } finally {
                g.dispose();
            }
            cancel.check();
            return new Rendered(PngEncoder.encode(image, limits), out.width(), out.height());
        } catch (Cancellation.CancelledException e) {
            throw cancel.timeout();
        } catch (PreflightRefused e) {
            throw e.refusal;
        } catch (EmbeddedImageProbe.ImageTooLarge e) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "an embedded image is above the pixel limit");
        } catch (InvalidPasswordException e) {
            throw new RenderException(ErrorCode.UNSUPPORTED, "PDF is encrypted with a password");
        } catch (IOException e) {
            if (cancel.isCancelled()) {
                throw cancel.timeout();
            }
            throw new RenderException(ErrorCode.PARSE_ERROR, "PDF could not be read");
        } catch (RuntimeException e) {
            if (cancel.isCancelled()) {
                throw cancel.timeout();
            }
            throw new RenderException(ErrorCode.PARSE_ERROR, "PDF could not be rendered ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    private static PDDocument load(byte[] pdf, LimitChecker limits) throws IOException {
        return Loader.loadPDF(pdf, "", null, null,
                MemoryUsageSetting.setupMainMemoryOnly(limits.pdfScratchBytes()).streamCache);
    }

    /** Carries a {@link RenderException} out through PDFBox's drawing methods. */
    private static final class PreflightRefused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient RenderException refusal;

        PreflightRefused(RenderException refusal) {
            super(refusal.getMessage(), null, false, false);
            this.refusal = refusal;
        }
    }

    /** A renderer whose page drawer checks the cancellation before every operator. */
    private static final class CancellableRenderer extends PDFRenderer {
        private final Cancellation cancel;
        private final LimitChecker limits;

        CancellableRenderer(PDDocument doc, Cancellation cancel, LimitChecker limits) {
            super(doc);
            this.cancel = cancel;
            this.limits = limits;
        }

        @Override
        protected PageDrawer createPageDrawer(PageDrawerParameters parameters) throws IOException {
            return new PageDrawer(parameters) {
                @Override
                public void processPage(PDPage page) throws IOException {
                    super.processPage(new PDPage(page.getCOSObject()) {
                        @Override
                        public RandomAccessRead getContentsForStreamParsing() throws IOException {
                            return new CancellableRead(super.getContentsForStreamParsing(), cancel);
                        }
                    });
                }

                @Override
                protected void processOperator(Operator operator, List<COSBase> operands) throws IOException {
                    cancel.checkUnchecked();
                    if (operator.getImageParameters() != null) {
                        // An inline image lives in a content stream, out of the preflight's reach,
                        // and PDFBox decodes it as soon as it meets it.
                        try {
                            PdfPreflight.checkImage(operator.getImageParameters(), operator.getImageData(), limits);
                        } catch (RenderException e) {
                            throw new PreflightRefused(e);
                        }
                    }
                    super.processOperator(operator, operands);
                }

                @Override
                public void drawImage(PDImage image) throws IOException {
                    if ((long) image.getWidth() * image.getHeight() > limits.maxSourceImagePixels()) {
                        throw new EmbeddedImageProbe.ImageTooLarge();
                    }

                    super.drawImage(image);
                }
            };
        }
    }
}
