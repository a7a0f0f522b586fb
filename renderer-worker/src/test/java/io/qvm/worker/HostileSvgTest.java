package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.zip.CRC32;
import java.util.zip.DeflaterOutputStream;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Hostile SVGs: each gets its typed error or a correct image, the trap server on 127.0.0.1
 * receives nothing, nothing leaks into the message, and the same handler keeps serving.
 */
@Tag("unit")
@Tag("security")
class HostileSvgTest {

    private static TrapServer trap;
    private static final Renders R = new Renders();

    @BeforeAll
    static void startTrap() throws Exception {
        trap = new TrapServer();
    }

    @AfterAll
    static void stopTrap() {
        trap.close();
    }

    @AfterEach
    void nothingReachedTheNetworkAndTheWorkerServes() {
        assertEquals(java.util.List.of(), trap.requests(), "requests that reached the trap server");
        assertTrue(R.stillServes(), "the handler still renders a good SVG");
    }

    private static Renders.Outcome render(String corpusName) {
        return R.render(RenderRequest.svg(Corpus.withBase(corpusName, trap.base())));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "hostile/image-http.svg, UNSUPPORTED",
        "hostile/use-http.svg, UNSUPPORTED",
        "hostile/feimage-http.svg, UNSUPPORTED",
        "hostile/file-image.svg, UNSUPPORTED",
        "hostile/file-relative.svg, UNSUPPORTED",
        "hostile/jar-use.svg, UNSUPPORTED",
        "hostile/pattern-http.svg, UNSUPPORTED",
        "hostile/data-svg-image.svg, UNSUPPORTED",
        "hostile/xxe-file.svg, UNSUPPORTED",
        "hostile/xxe-http.svg, UNSUPPORTED",
        "hostile/xxe-parameter.svg, UNSUPPORTED",
        "hostile/billion-laughs.svg, LIMIT_EXCEEDED",
        "hostile/huge-size.svg, LIMIT_EXCEEDED",
        "hostile/huge-viewbox.svg, LIMIT_EXCEEDED",
        "hostile/use-bomb.svg, LIMIT_EXCEEDED",
        "hostile/not-svg.svg, PARSE_ERROR",
        "hostile/no-namespace.svg, PARSE_ERROR",
        "hostile/truncated.svg, PARSE_ERROR",
        // Batik 1.19 knows only xlink:href: a bare SVG 2 href leaves <image> without its required link.
        "hostile/image-href-svg2.svg, PARSE_ERROR",
    })
    void refusedWithATypedError(String name, ErrorCode expected) {
        Renders.Outcome o = render(name);
        assertNotNull(o.error(), name + " should fail, got " + o);
        assertEquals(expected, o.code(), o.toString());
        assertFalse(o.error().message().contains("127.0.0.1"), "message echoes no input: " + o.error().message());
        assertFalse(o.error().message().contains("passwd"), "message echoes no input: " + o.error().message());
        assertTrue(o.error().message().length() < 200, "short message");
    }

    @ParameterizedTest(name = "{0} as a data: SVG image -> {1}")
    @CsvSource({
        "hostile/xxe-http.svg, UNSUPPORTED",
        "hostile/xxe-parameter.svg, UNSUPPORTED",
        "hostile/image-http.svg, UNSUPPORTED",
        "hostile/use-http.svg, UNSUPPORTED",
        "hostile/feimage-http.svg, UNSUPPORTED",
        "hostile/pattern-http.svg, UNSUPPORTED",
        "hostile/file-image.svg, UNSUPPORTED",
        "hostile/data-svg-image.svg, UNSUPPORTED",
        "hostile/billion-laughs.svg, LIMIT_EXCEEDED",
        "hostile/use-bomb.svg, LIMIT_EXCEEDED",
    })
    void insideAnEmbeddedSvgImageAsOutside(String name, ErrorCode expected) {
        byte[] inner = Corpus.withBase(name, trap.base());
        Renders.Outcome o = R.render(RenderRequest.svg(EmbeddedSvgs.utf8(
                EmbeddedSvgs.embedding(EmbeddedSvgs.dataUrl(inner)))));
        assertEquals(expected, o.code(), o.toString());
    }

    @ParameterizedTest(name = "{0} renders without its external part")
    @CsvSource({
        "hostile/css-import.svg",
        "hostile/xml-stylesheet.svg",
        "hostile/external-dtd.svg",
    })
    void rendersWithoutFetching(String name) {
        Renders.Outcome o = render(name);
        if (o.error() != null) {
            // Refusing the whole document is also correct, as long as it is the typed refusal.
            assertEquals(ErrorCode.UNSUPPORTED, o.code(), o.toString());
            return;
        }
        BufferedImage img = o.image();
        assertTrue(Pixels.near(img, 25, 25, 0xFF00FF00), name + ": the document's own content is drawn");
    }

    @ParameterizedTest(name = "{0}: scripts never run")
    @CsvSource({"hostile/script-ecmascript.svg", "hostile/script-types.svg", "hostile/onload.svg"})
    void scriptsNeverRun(String name) {
        BufferedImage img = render(name).image();
        assertTrue(Pixels.near(img, 25, 25, 0xFF00FF00), name + ": the rect keeps its static green");
    }

    @ParameterizedTest(name = "{0}: font falls back, text still drawn")
    @CsvSource({"hostile/fontface-css.svg", "hostile/fontface-svg.svg"})
    void externalFontsFallBack(String name) {
        Renders.Outcome o = render(name);
        if (o.error() != null) {
            assertEquals(ErrorCode.UNSUPPORTED, o.code(), o.toString());
            return;
        }
        assertTrue(Pixels.differing(o.image(), 0, 0, 200, 60, 0xFFFFFFFF) > 100, "fallback text is drawn");
    }

    @Test
    void deepNestingIsALimitNotACrash() {
        StringBuilder sb = new StringBuilder("<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'>");
        sb.append("<g>".repeat(100_000)).append("<rect width='5' height='5'/>").append("</g>".repeat(100_000));
        sb.append("</svg>");
        Renders.Outcome o = R.render(RenderRequest.svg(sb.toString().getBytes(StandardCharsets.UTF_8)));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
    }

    @Test
    void nestingAtTheLimitStillRenders() {
        int depth = LimitChecker.MAX_SVG_DEPTH - 1;
        StringBuilder sb = new StringBuilder("<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'>");
        sb.append("<g>".repeat(depth - 1)).append("<rect width='10' height='10' fill='#f00'/>")
                .append("</g>".repeat(depth - 1)).append("</svg>");
        BufferedImage img = R.render(RenderRequest.svg(sb.toString().getBytes(StandardCharsets.UTF_8))).image();
        assertTrue(Pixels.differing(img, 0, 0, 10, 10, 0xFFFFFFFF) > 50);
    }

    @Test
    void embeddedImageBombIsALimitNotAnOutOfMemory() throws Exception {
        String png = Base64.getEncoder().encodeToString(pngHeaderOnly(60_000, 60_000));
        String svg = "<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink' width='10'"
                + " height='10'><image width='10' height='10' xlink:href='data:image/png;base64," + png + "'/></svg>";
        Renders.Outcome o = R.render(RenderRequest.svg(svg.getBytes(StandardCharsets.UTF_8)));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
    }

    /** A PNG that declares {@code w} × {@code h} grey pixels with a tiny deflate stream (a bomb's header). */
    static byte[] pngHeaderOnly(int w, int h) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'});
        ByteBuffer ihdr = ByteBuffer.allocate(13).putInt(w).putInt(h).put((byte) 8).put((byte) 0).put((byte) 0)
                .put((byte) 0).put((byte) 0);
        chunk(out, "IHDR", ihdr.array());
        ByteArrayOutputStream z = new ByteArrayOutputStream();
        try (DeflaterOutputStream d = new DeflaterOutputStream(z)) {
            d.write(new byte[64 * 1024]);
        }
        chunk(out, "IDAT", z.toByteArray());
        chunk(out, "IEND", new byte[0]);
        return out.toByteArray();
    }

    private static void chunk(ByteArrayOutputStream out, String type, byte[] data) throws Exception {
        byte[] t = type.getBytes(StandardCharsets.US_ASCII);
        out.write(ByteBuffer.allocate(4).putInt(data.length).array());
        out.write(t);
        out.write(data);
        CRC32 crc = new CRC32();
        crc.update(t);
        crc.update(data);
        out.write(ByteBuffer.allocate(4).putInt((int) crc.getValue()).array());
    }

    @Test
    void emptyAndRandomInput() {
        assertEquals(ErrorCode.PARSE_ERROR, R.render(RenderRequest.svg(new byte[0])).code());
        byte[] junk = new byte[50_000];
        new Random(7).nextBytes(junk);
        assertEquals(ErrorCode.PARSE_ERROR, R.render(RenderRequest.svg(junk)).code());
    }

    @Test
    void anExplicitSizeOverridesAHugeDeclaredOne() {
        byte[] huge = Corpus.bytes("hostile/huge-size.svg");
        Renders.Outcome o = R.render(RenderRequest.svg(huge).withSize(100, 100));
        assertEquals(100, o.image().getWidth());
    }

    @Test
    void requestAboveTheSideLimitIsRefusedBeforeRendering() {
        Renders.Outcome o = R.render(RenderRequest.svg(Corpus.bytes("ok/shapes.svg")).withSize(5000, 0));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
    }
}
