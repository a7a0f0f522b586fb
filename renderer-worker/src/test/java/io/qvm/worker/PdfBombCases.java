package io.qvm.worker;

import io.qvm.protocol.RenderRequest;
import java.util.List;
import java.util.function.Supplier;
import org.apache.pdfbox.cos.COSName;

/**
 * PDFs that make PDFBox 3 allocate in proportion to something they declare ({@link PdfBombs}),
 * with the outcome a worker with the guest's heap (-Xmx576m) must give, and ordinary documents of
 * the same kinds that must still render. A bomb that renders says which limit holds it.
 */
final class PdfBombCases {

    private static final String LIMIT = "LIMIT_EXCEEDED";
    /** A 50 pt page at 96 dpi. */
    private static final int PAGE_PX = 67;

    static final List<HostileCase> CASES = List.of(
            // Masks: PDFBox scales the image up to its mask's size (applyMask).
            HostileCase.refused("pdf-smask-size", "smask-30000", pdf(() -> PdfBombs.maskBomb(COSName.SMASK, 30_000)),
                    LIMIT),
            HostileCase.refused("pdf-smask-size", "smask-in-form", pdf(() -> PdfBombs.maskBombInForm(30_000)), LIMIT),
            HostileCase.refused("pdf-smask-size", "smask-in-annotation-appearance",
                    pdf(() -> PdfBombs.maskBombInAnnotation(30_000)), LIMIT),
            HostileCase.refused("pdf-smask-size", "smask-in-type3-glyph",
                    pdf(() -> PdfBombs.maskBombInType3Glyph(30_000)), LIMIT),
            HostileCase.renders("pdf-smask-size", "ordinary-smask-2000", pdf(() -> PdfBombs.maskedImage(2000)),
                    PAGE_PX, PAGE_PX),
            HostileCase.refused("pdf-mask-size", "stencil-mask-20000",
                    pdf(() -> PdfBombs.maskBomb(COSName.MASK, 20_000)), LIMIT),
            // Codecs: what the data's own header declares.
            HostileCase.refused("pdf-codec-size", "inline-jpeg-frame-20000",
                    pdf(() -> PdfBombs.jpegHeaderLies(20_000, true)), LIMIT),
            // Held by PDFBox: it reads an image stream's JPEG only within the dictionary's 1 x 1.
            HostileCase.renders("pdf-codec-size", "jpeg-frame-20000", pdf(() -> PdfBombs.jpegHeaderLies(20_000, false)),
                    PAGE_PX, PAGE_PX),
            HostileCase.refused("pdf-codec-size", "ccitt-columns-70000",
                    pdf(() -> PdfBombs.ccittColumns(70_000, 30_000)), LIMIT),
            // Held by PDFBox: no JPEG 2000 or JBIG2 plugin in the worker, the image is skipped.
            HostileCase.renders("pdf-codec-size", "jpx-without-plugin",
                    pdf(() -> PdfBombs.unsupportedCodec(COSName.JPX_DECODE)), PAGE_PX, PAGE_PX),
            HostileCase.renders("pdf-codec-size", "jbig2-without-plugin",
                    pdf(() -> PdfBombs.unsupportedCodec(COSName.JBIG2_DECODE)), PAGE_PX, PAGE_PX),
            // Samples wider than 4 bytes a pixel: 15 M pixels pass the pixel limit, at 32 bytes each.
            HostileCase.refused("pdf-sample-size", "devicen-32-components", pdf(() -> PdfBombs.wideSamples(5000, 4000)),
                    LIMIT),
            // Decoded data: PDFBox holds a decoded stream whole, whatever the dictionary says.
            HostileCase.refused("pdf-decoded-stream", "image-data-600mib",
                    pdf(() -> PdfBombs.imageDataBomb(600L << 20, false)), LIMIT),
            HostileCase.refused("pdf-decoded-stream", "inline-image-data-600mib",
                    pdf(() -> PdfBombs.imageDataBomb(600L << 20, true)), LIMIT),
            HostileCase.refused("pdf-decoded-stream", "form-content-600mib",
                    pdf(() -> PdfBombs.formContentBomb(600L << 20)), LIMIT),
            // Held by PDFBox and the watchdog: the page's content is parsed as it is decoded.
            HostileCase.renders("pdf-decoded-stream", "page-content-600mib",
                    pdf(() -> PdfBombs.contentBomb(600L << 20)), PAGE_PX, PAGE_PX),
            // Tables PDFBox builds from declarations.
            HostileCase.refused("pdf-sampled-function", "size-50m", pdf(() -> PdfBombs.sampledFunction(50_000_000)),
                    LIMIT),
            HostileCase.renders("pdf-sampled-function", "ordinary-size-256", pdf(() -> PdfBombs.sampledFunction(256)),
                    PAGE_PX, PAGE_PX),
            // Measured at 576 MiB without the preflight: 4 M triangles thrash the heap for 20 s, 440 k
            // Coons patches run out of it.
            HostileCase.refused("pdf-mesh-shading", "free-form-16mib", pdf(() -> PdfBombs.mesh(4, 16L << 20)),
                    LIMIT),
            HostileCase.refused("pdf-mesh-shading", "coons-16mib", pdf(() -> PdfBombs.mesh(6, 16L << 20)), LIMIT),
            HostileCase.renders("pdf-mesh-shading", "ordinary-free-form", pdf(() -> PdfBombs.mesh(4, 1200)), PAGE_PX,
                    PAGE_PX),
            // Fonts: fontbox's Type 1 parser makes room for every subroutine /Subrs declares.
            HostileCase.refused("pdf-font-program", "type1-subrs-400m", pdf(() -> PdfBombs.type1Subrs(400_000_000)),
                    LIMIT),
            HostileCase.renders("pdf-font-program", "ordinary-type1-subrs-100", pdf(() -> PdfBombs.type1Subrs(100)),
                    PAGE_PX, PAGE_PX),
            // Held by PDFBox: a tile's raster is clipped to 3000 x 3000 (TilingPaint's MAXEDGE).
            HostileCase.renders("pdf-tiling-pattern", "tile-100000pt", pdf(() -> PdfBombs.hugeTile(100_000)), PAGE_PX,
                    PAGE_PX),
            // Held by PDFBox: a transparency group's raster is its bbox clipped to the page's clip.
            HostileCase.renders("pdf-soft-mask-group", "luminosity-bbox-1000000pt",
                    pdf(() -> PdfBombs.hugeSoftMaskGroup(1_000_000)), PAGE_PX, PAGE_PX),
            // Held by the crop-box check: PDFBox's renderer ignores /UserUnit.
            HostileCase.renders("pdf-page-size", "user-unit-75000", pdf(() -> PdfBombs.userUnit(75_000)), PAGE_PX,
                    PAGE_PX));

    private PdfBombCases() {
    }

    private static Supplier<RenderRequest> pdf(Supplier<byte[]> bytes) {
        return () -> RenderRequest.pdf(bytes.get());
    }
}
