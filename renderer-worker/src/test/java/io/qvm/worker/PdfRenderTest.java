package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import java.awt.image.BufferedImage;
import org.apache.pdfbox.pdmodel.common.PDRectangle;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** PDFs (made with PDFBox) through the real PDFBox renderer, in process. */
@Tag("unit")
class PdfRenderTest {

    private static final Renders R = new Renders();
    private static final int WHITE = 0xFFFFFFFF;

    @Test
    void pageAtDefaultDpiWithShapeAndText() {
        Renders.Outcome o = R.render(RenderRequest.pdf(Pdfs.squareAndText()));
        BufferedImage img = o.image();
        assertEquals(267, img.getWidth(), "200 pt at 96 dpi");
        assertEquals(133, img.getHeight());
        assertTrue(Pixels.near(img, 60, 60, 0xFFFF0000), "red square");
        int ink = Pixels.differing(img, 140, 40, 267, 100, WHITE);
        assertTrue(ink > 300, "text pixels: " + ink);
        assertEquals(0, Pixels.differing(img, 140, 0, 267, 25, WHITE), "above the text is blank");
    }

    @Test
    void dpiAndSize() {
        byte[] pdf = Pdfs.squareAndText();
        BufferedImage at72 = R.render(RenderRequest.pdf(pdf).withDpi(72)).image();
        assertEquals(200, at72.getWidth());
        assertEquals(100, at72.getHeight());
        BufferedImage fit = R.render(RenderRequest.pdf(pdf).withSize(0, 50)).image();
        assertEquals(100, fit.getWidth());
        assertEquals(50, fit.getHeight());
    }

    @Test
    void choosesThePage() {
        byte[] pdf = Pdfs.numbered(3);
        int p1 = R.render(RenderRequest.pdf(pdf).withPage(1)).image().getRGB(10, 10) & 0xFF;
        int p3 = R.render(RenderRequest.pdf(pdf).withPage(3)).image().getRGB(10, 10) & 0xFF;
        assertTrue(p3 > p1, "page 3 is lighter than page 1: " + p3 + " > " + p1);
        Renders.Outcome beyond = R.render(RenderRequest.pdf(pdf).withPage(4));
        assertEquals(ErrorCode.BAD_REQUEST, beyond.code(), beyond.toString());
    }

    @Test
    void backgroundShowsThroughAnEmptyPage() {
        byte[] empty = Pdfs.make(1, new PDRectangle(50, 50), (cs, n) -> { });
        BufferedImage clear = R.render(RenderRequest.pdf(empty).withBackground("transparent")).image();
        assertEquals(0, clear.getRGB(10, 10) >>> 24);
        BufferedImage blue = R.render(RenderRequest.pdf(empty).withBackground("#0000FF")).image();
        assertTrue(Pixels.near(blue, 10, 10, 0xFF0000FF));
    }

    @Test
    void pageCountAboveTheLimit() {
        Limits five = new Limits(4 << 20, 8 << 20, 4_000_000, 4000, 5, 20_000);
        Renders.Outcome o = R.render(RenderRequest.pdf(Pdfs.numbered(6)), five);
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
        assertTrue(R.stillServes());
    }
}
