package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.RenderRequest;
import java.awt.image.BufferedImage;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Ordinary SVGs through the real Batik, in process. */
@Tag("unit")
class SvgRenderTest {

    private static final Renders R = new Renders();
    private static final int WHITE = 0xFFFFFFFF;

    @Test
    void shapesAtTheirOwnSize() {
        Renders.Outcome o = R.render(RenderRequest.svg(Corpus.bytes("ok/shapes.svg")));
        BufferedImage img = o.image();
        assertEquals(200, img.getWidth());
        assertEquals(100, img.getHeight());
        assertEquals(200, o.result().width());
        assertTrue(Pixels.near(img, 50, 20, 0xFFFF0000), "red square");
        assertTrue(Pixels.near(img, 150, 50, 0xFF0000FF), "blue circle");
        assertTrue(Pixels.near(img, 195, 95, WHITE), "white background");
        assertEquals(o.result().png().length, o.result().outputBytes());
    }

    @Test
    void sizeAndDpiOptions() {
        byte[] svg = Corpus.bytes("ok/shapes.svg");
        BufferedImage fit = R.render(RenderRequest.svg(svg).withSize(400, 0)).image();
        assertEquals(400, fit.getWidth());
        assertEquals(200, fit.getHeight());
        BufferedImage box = R.render(RenderRequest.svg(svg).withSize(100, 100)).image();
        assertEquals(100, box.getWidth());
        assertEquals(100, box.getHeight());
        assertTrue(Pixels.near(box, 50, 10, WHITE), "letterboxed: top band is background");
        assertTrue(Pixels.near(box, 10, 40, 0xFFFF0000), "scaled red square, centred");
        assertTrue(Pixels.near(box, 50, 90, WHITE), "letterboxed: bottom band is background");
        BufferedImage dpi = R.render(RenderRequest.svg(svg).withDpi(48)).image();
        assertEquals(100, dpi.getWidth());
        assertEquals(50, dpi.getHeight());
    }

    @Test
    void gradientsWithOnlyAViewBox() {
        BufferedImage img = R.render(RenderRequest.svg(Corpus.bytes("ok/gradient.svg"))).image();
        assertEquals(100, img.getWidth());
        assertEquals(50, img.getHeight());
        int left = img.getRGB(2, 2) & 0xFF;
        int middle = img.getRGB(40, 2) & 0xFF;
        assertTrue(left < middle, "linear gradient runs from dark to light: " + left + " < " + middle);
    }

    @Test
    void textGivesInkWhereTheTextIs() {
        BufferedImage img = R.render(RenderRequest.svg(Corpus.bytes("ok/text.svg"))).image();
        int ink = Pixels.differing(img, 10, 20, 290, 80, WHITE);
        assertTrue(ink > 500, "text pixels: " + ink);
        assertEquals(0, Pixels.differing(img, 0, 85, 300, 100, WHITE), "nothing below the baseline area");
    }

    @Test
    void embeddedDataImage() {
        BufferedImage img = R.render(RenderRequest.svg(Corpus.bytes("ok/data-image.svg"))).image();
        assertTrue(Pixels.near(img, 20, 20, 0xFFFF0000), "the data: PNG is drawn");
    }

    @Test
    void standardDoctypeAndPhysicalUnits() {
        BufferedImage img = R.render(RenderRequest.svg(Corpus.bytes("ok/doctype.svg"))).image();
        assertEquals(76, img.getWidth(), "20 mm at 96 dpi");
        assertEquals(38, img.getHeight());
        assertTrue(Pixels.near(img, 30, 20, 0xFF008000));
    }

    @Test
    void localUseAndStyle() {
        BufferedImage img = R.render(RenderRequest.svg(Corpus.bytes("ok/local-use.svg"))).image();
        assertTrue(Pixels.near(img, 25, 25, 0xFFFF00FF));
        assertTrue(Pixels.near(img, 75, 25, 0xFFFF00FF));
    }

    @Test
    void backgrounds() {
        byte[] svg = Corpus.bytes("ok/shapes.svg");
        BufferedImage clear = R.render(RenderRequest.svg(svg).withBackground("transparent")).image();
        assertEquals(0, clear.getRGB(195, 95) >>> 24, "transparent corner");
        BufferedImage teal = R.render(RenderRequest.svg(svg).withBackground("#008080")).image();
        assertTrue(Pixels.near(teal, 195, 95, 0xFF008080));
        BufferedImage half = R.render(RenderRequest.svg(svg).withBackground("#00008080")).image();
        int a = half.getRGB(195, 95) >>> 24;
        assertTrue(a > 100 && a < 160, "half-transparent background alpha " + a);
    }
}
