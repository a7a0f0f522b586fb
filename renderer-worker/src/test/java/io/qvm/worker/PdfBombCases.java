package io.qvm.worker;

import io.qvm.protocol.RenderRequest;
import java.util.List;
import java.util.function.Supplier;
import org.apache.pdfbox.cos.COSName;

/**
 * PDFs that make PDFBox 3 allocate in proportion to something they declare ({@link PdfBombs}),
 * with the outcome a worker with the guest's heap must give. Cases that render name the limit
 * that holds them.
 */
final class PdfBombCases {

    private static final String LIMIT = "LIMIT_EXCEEDED";

    static final List<HostileCase> CASES = List.of(
            HostileCase.refused("pdf-smask-size", "smask-30000", pdf(() -> PdfBombs.maskBomb(COSName.SMASK, 30_000)),
                    LIMIT),
            HostileCase.refused("pdf-mask-size", "stencil-mask-60000",
                    pdf(() -> PdfBombs.maskBomb(COSName.MASK, 60_000)), LIMIT),
            HostileCase.refused("pdf-smask-size", "smask-in-form", pdf(() -> PdfBombs.maskBombInForm(30_000)), LIMIT),
            HostileCase.refused("pdf-smask-size", "smask-in-annotation-appearance",
                    pdf(() -> PdfBombs.maskBombInAnnotation(30_000)), LIMIT),
            HostileCase.refused("pdf-codec-size", "jpeg-frame-20000",
                    pdf(() -> PdfBombs.jpegHeaderLies(20_000, false)), LIMIT),
            HostileCase.refused("pdf-codec-size", "inline-jpeg-frame-20000",
                    pdf(() -> PdfBombs.jpegHeaderLies(20_000, true)), LIMIT),
            HostileCase.refused("pdf-codec-size", "ccitt-columns", pdf(() -> PdfBombs.ccittColumns(160_000, 30_000)),
                    LIMIT),
            // No JPEG 2000 or JBIG2 plugin in the worker: PDFBox skips the image (MissingImageReaderException).
            HostileCase.renders("pdf-codec-size", "jpx-without-plugin",
                    pdf(() -> PdfBombs.unsupportedCodec(COSName.JPX_DECODE)), 67, 67),
            HostileCase.renders("pdf-codec-size", "jbig2-without-plugin",
                    pdf(() -> PdfBombs.unsupportedCodec(COSName.JBIG2_DECODE)), 67, 67),
            HostileCase.refused("pdf-sample-size", "devicen-32x16bit", pdf(() -> PdfBombs.wideSamples(5000, 2000)),
                    LIMIT),
            HostileCase.refused("pdf-sampled-function", "size-50m", pdf(() -> PdfBombs.sampledFunction(50_000_000)),
                    LIMIT),
            HostileCase.refused("pdf-mesh-shading", "free-form-64mib", pdf(() -> PdfBombs.mesh(4, 64L << 20)), LIMIT),
            HostileCase.refused("pdf-mesh-shading", "coons-1mib", pdf(() -> PdfBombs.mesh(6, 1L << 20)), LIMIT),
            HostileCase.refused("pdf-decoded-stream", "content-600mib", pdf(() -> PdfBombs.contentBomb(600L << 20)), LIMIT));

    private PdfBombCases() {
    }

    private static Supplier<RenderRequest> pdf(Supplier<byte[]> bytes) {
        return () -> RenderRequest.pdf(bytes.get());
    }
}
