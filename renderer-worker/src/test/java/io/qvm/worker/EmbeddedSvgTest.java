package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.util.Base64;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.apache.batik.util.ParsedURL;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * SVG images embedded as {@code data:} URLs and internal DTD entities: the safe forms render (with
 * the pixels where they belong), the limits that bound them answer LIMIT_EXCEEDED, and everything
 * external stays refused, also from inside an embedded document. The trap server receives nothing.
 */
@Tag("unit")
@Tag("security")
class EmbeddedSvgTest {

    private static final Renders R = new Renders();

    @AfterEach
    void theWorkerServes() {
        assertTrue(R.stillServes(), "the handler still renders a good SVG");
    }

    static Stream<HostileCase> cases() {
        return SafeSvgCases.CASES.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void eachCaseHasItsOutcome(HostileCase c) {
        Renders.Outcome o = R.render(c.request().get());
        if ("OK".equals(c.expected())) {
            BufferedImage img = o.image();
            assertEquals(c.width(), img.getWidth(), c + ": " + o);
            assertEquals(c.height(), img.getHeight(), c + ": " + o);
        } else {
            assertNotNull(o.error(), c + " should fail, got " + o);
            assertEquals(ErrorCode.valueOf(c.expected()), o.code(), c + ": " + o);
            assertTrue(o.error().message().length() < 200, "short message");
        }
    }

    @ParameterizedTest(name = "{0}: {4}")
    @CsvSource({
        "safe/data-svg-image.svg, 30, 30, FFFF0000, the embedded red square",
        "safe/data-svg-image.svg, 5, 5, FFFFFFFF, white outside the image",
        "safe/data-svg-utf8.svg, 30, 30, FFFF0000, the embedded red square",
        "safe/data-svgz-image.svg, 30, 30, FFFF0000, the embedded red square",
        "safe/nested-twice.svg, 15, 15, FF0000FF, the first embedded document (blue)",
        "safe/nested-twice.svg, 30, 30, FFFF0000, the one it embeds (red)",
        "safe/nested-twice.svg, 5, 5, FFFFFFFF, the outer document (white)",
        "safe/data-svg-local-use.svg, 20, 30, FFFF0000, first <use> of the embedded document's own #r",
        "safe/data-svg-local-use.svg, 40, 30, FFFF0000, second one",
        "safe/data-svg-local-use.svg, 5, 5, FFFFFFFF, the outer document's #r (blue) is never drawn",
    })
    void embeddedSvgIsDrawnWhereItBelongs(String name, int x, int y, String argb, String what) {
        BufferedImage img = R.render(RenderRequest.svg(Corpus.bytes(name))).image();
        assertTrue(Pixels.near(img, x, y, (int) Long.parseLong(argb, 16)), name + ": " + what);
    }

    @Test
    void nestingAtTheLimitDrawsTheInnermost() {
        BufferedImage img = R.render(RenderRequest.svg(EmbeddedSvgs.nested(LimitChecker.MAX_SVG_IMAGE_NESTING)))
                .image();
        assertTrue(Pixels.near(img, 10, 10, 0xFFFF0000));
    }

    @Test
    void entitiesExpandToMarkupAndAttributeValues() {
        BufferedImage rect = R.render(RenderRequest.svg(Corpus.bytes("safe/entity-rect.svg"))).image();
        assertTrue(Pixels.near(rect, 20, 20, 0xFF0000FF), "first &Rect;");
        assertTrue(Pixels.near(rect, 20, 60, 0xFF0000FF), "second &Rect;, translated");
        BufferedImage pe = R.render(RenderRequest.svg(Corpus.bytes("safe/parameter-entity.svg"))).image();
        assertTrue(Pixels.near(pe, 25, 25, 0xFF00FF00), "fill from an entity a parameter entity declared");
        BufferedImage ai = R.render(RenderRequest.svg(Corpus.bytes("safe/illustrator-entities.svg"))).image();
        assertTrue(Pixels.near(ai, 40, 20, 0xFF008000), "namespaces from entities: the green layer");
    }

    @Test
    void entitiesJustBelowTheLimitsRender() {
        assertEquals(20, R.render(RenderRequest.svg(
                EmbeddedSvgs.entityExpansions(LimitChecker.MAX_SVG_ENTITY_EXPANSIONS / 2))).image().getWidth());
        assertEquals(20, R.render(RenderRequest.svg(
                EmbeddedSvgs.bigEntity(LimitChecker.MAX_SVG_ENTITY_CHARS / 2))).image().getWidth());
    }

    @Test
    void externalDocumentsStayRefusedForUseAndFeImage() {
        String data = EmbeddedSvgs.dataUrl(EmbeddedSvgs.utf8(
                "<svg xmlns='http://www.w3.org/2000/svg'><rect id='r' width='5' height='5'/></svg>"));
        Renders.Outcome use = R.render(RenderRequest.svg(EmbeddedSvgs.utf8("<svg " + EmbeddedSvgs.SVG_NS
                + " width='20' height='20'><use xlink:href='" + data + "#r'/></svg>")));
        assertEquals(ErrorCode.UNSUPPORTED, use.code(), use.toString());
        Renders.Outcome fe = R.render(RenderRequest.svg(EmbeddedSvgs.utf8("<svg " + EmbeddedSvgs.SVG_NS
                + " width='20' height='20'><filter id='f'><feImage xlink:href='" + data + "#r'/></filter>"
                + "<rect width='20' height='20' filter='url(#f)'/></svg>")));
        assertNotNull(fe.error(), fe.toString());
    }

    @Test
    void aBrokenEmbeddedSvgIsAParseError() {
        Renders.Outcome o = R.render(RenderRequest.svg(EmbeddedSvgs.utf8(
                EmbeddedSvgs.embedding("data:image/svg+xml,%3Csvg"))));
        assertEquals(ErrorCode.PARSE_ERROR, o.code(), o.toString());
    }

    @Test
    void rasterImagesShareOnePixelBudgetAcrossTheTree() throws Exception {
        SvgBudget budget = new SvgBudget(30 * 30 + 10, 1 << 20);
        LockedDownUserAgent ua = new LockedDownUserAgent(new java.awt.Dimension(10, 10), budget);
        ParsedURL a = new ParsedURL(pngDataUrl(30, 30, 0xFF0000));
        ParsedURL b = new ParsedURL(pngDataUrl(30, 30, 0x00FF00));
        ua.checkLoadExternalResource(a, null);
        ua.checkLoadExternalResource(a, null); // the same image again costs nothing more
        assertThrows(EmbeddedImageProbe.ImageTooLarge.class, () -> ua.checkLoadExternalResource(b, null));
        assertTrue(ua.refusedOversizeImage());
    }

    private static String pngDataUrl(int w, int h, int rgb) throws Exception {
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                img.setRGB(x, y, rgb);
            }
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ImageIO.write(img, "png", out);
        return "data:image/png;base64," + Base64.getEncoder().encodeToString(out.toByteArray());
    }
}
