package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.apache.batik.util.ParsedURL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Documents that refer to themselves ({@link SvgReferences}) and what is left when Batik still
 * recurses too deeply: each kind of reference, directly and through chains, by attribute,
 * {@code style} and style sheet, is refused before anything is built, and a stack overflow is an
 * immediate LIMIT_EXCEEDED after which the same handler renders again. The request deadline is
 * short, so a render that spun instead of answering would come back TIMEOUT.
 */
@Tag("unit")
@Tag("security")
class SelfReferenceTest {

    /** A 5 s request deadline (the render's is 4.5 s): a spin fails as TIMEOUT, not after minutes. */
    private static final Limits SHORT = new Limits(4 << 20, 8 << 20, 4_000_000, 4000, 20, 5000);

    private static final Renders R = new Renders();

    /** Batik's classes are loaded once, as the worker does before HELLO, so the deadline is the render's alone. */
    @BeforeAll
    static void warmUp() {
        R.handler().warmUp();
    }

    static Stream<String> cycles() {
        return Stream.of("clip-self", "clip-chain-3", "clip-on-clippath", "clip-style-attribute", "clip-style-sheet",
                "mask-self", "mask-chain-2", "feimage-self", "feimage-href-chain-3", "filter-href-self",
                "pattern-self", "pattern-stroke-chain-2", "pattern-inherited-fill", "pattern-href-chain-2",
                "marker-self", "marker-mid-end-chain-2", "marker-shorthand-sheet", "use-self", "use-ancestor",
                "use-ancestor-href", "use-chain-3", "use-symbol-root", "use-document-url", "gradient-href-chain-2",
                "tref-self", "svg-font-glyph");
    }

    @ParameterizedTest(name = "{0} is refused as a cycle")
    @MethodSource("cycles")
    void aDocumentThatRefersToItselfIsRefusedBeforeItIsBuilt(String name) {
        Renders.Outcome o = R.render(RenderRequest.svg(Corpus.bytes("cycles/" + name + ".svg")), SHORT);
        assertEquals(ErrorCode.PARSE_ERROR, o.code(), o.toString());
        assertTrue(o.error().message().contains("refers to itself"), o.toString());
        assertTrue(R.handler().healthy());
        assertTrue(R.stillServes(), "the handler renders the next document");
    }

    @Test
    void theMessageNamesTheCycle() {
        Renders.Outcome o = R.render(RenderRequest.svg(Corpus.bytes("cycles/clip-chain-3.svg")), SHORT);
        assertTrue(o.error().message().contains("#a → #b → #c → #a"), o.toString());
    }

    @Test
    void anIdThatIsNotPlainIsNotQuoted() {
        String svg = svg("<clipPath id='a&lt;script&gt;'><rect width='10' height='10' clip-path='url(#a%3Cscript%3E)'"
                + " style='clip-path: url(\"#a&lt;script&gt;\")'/></clipPath><rect width='9' height='9' clip-path='url(#a)'/>");
        Renders.Outcome o = R.render(RenderRequest.svg(svg.getBytes(StandardCharsets.UTF_8)), SHORT);
        assertEquals(ErrorCode.PARSE_ERROR, o.code(), o.toString());
        assertTrue(o.error().message().contains("<clipPath> → <clipPath>"), o.toString());
        assertTrue(!o.error().message().contains("script"), o.toString());
    }

    @Test
    void anSvgImageThatRefersToItselfIsRefusedLikeTheDocument() {
        byte[] doc = EmbeddedSvgs.utf8(EmbeddedSvgs.embedding(EmbeddedSvgs.dataUrl(Corpus.bytes("cycles/use-ancestor.svg"))));
        Renders.Outcome o = R.render(RenderRequest.svg(doc), SHORT);
        assertEquals(ErrorCode.PARSE_ERROR, o.code(), o.toString());
        assertTrue(o.error().message().contains("refers to itself"), o.toString());
        assertTrue(R.stillServes());
    }

    @Test
    void aChainOfReferencesAboveTheLimitIsALimit() {
        int chain = SvgReferences.MAX_CHAIN + 7;
        Renders.Outcome o = R.render(RenderRequest.svg(gradientChain(chain)), SHORT);
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
        assertTrue(o.error().message().contains(chain + " references"), o.toString());
        assertTrue(o.error().message().contains("limit of " + SvgReferences.MAX_CHAIN), o.toString());
        assertTrue(R.stillServes());
    }

    @Test
    void aChainOfReferencesAtTheLimitRendersAndIsFollowedToItsEnd() {
        BufferedImage img = R.render(RenderRequest.svg(gradientChain(SvgReferences.MAX_CHAIN)), SHORT).image();
        assertTrue(Pixels.near(img, 50, 50, 0xFFFF0000), "the stops at the end of the chain paint the rect");
    }

    /**
     * References that meet without a cycle: one clipPath, mask, gradient and pattern used from many
     * places, a mask whose content is clipped, a symbol used twice (once through a group that uses
     * it), a gradient declared inside the group it fills, and a link to its own ancestor (a link is
     * not drawn).
     */
    @Test
    void sharedAndNestedReferencesWithoutACycleRender() {
        String svg = svg("<defs><clipPath id='c1'><rect width='100' height='100'/></clipPath>"
                + "<mask id='m1' maskUnits='userSpaceOnUse' x='0' y='0' width='100' height='100'>"
                + "<rect width='100' height='100' fill='white' clip-path='url(#c1)'/></mask>"
                + "<linearGradient id='g0'><stop offset='0' stop-color='lime'/></linearGradient>"
                + "<linearGradient id='g1' xlink:href='#g0'/>"
                + "<pattern id='p' width='10' height='10' patternUnits='userSpaceOnUse'>"
                + "<rect width='10' height='10' fill='url(#g1)'/></pattern>"
                + "<symbol id='s'><rect width='50' height='50' fill='url(#p)' clip-path='url(#c1)' mask='url(#m1)'/>"
                + "</symbol><g id='u'><use xlink:href='#s'/></g></defs>"
                + "<g id='top' fill='url(#g1)'><linearGradient id='g2' xlink:href='#g1'/>"
                + "<a xlink:href='#top'><use xlink:href='#u'/><use xlink:href='#s' x='50'/></a></g>");
        BufferedImage img = R.render(RenderRequest.svg(svg.getBytes(StandardCharsets.UTF_8)), SHORT).image();
        assertTrue(Pixels.near(img, 25, 25, 0xFF00FF00), "the pattern through every reference is drawn");
        assertTrue(Pixels.near(img, 75, 25, 0xFF00FF00), "the second use of the symbol too");
    }

    @Test
    void theSamplesAndTheOrdinaryCorpusStillRender() throws IOException {
        for (Path sample : List.of(Path.of("../samples/hello.svg"))) {
            Renders.Outcome o = R.render(RenderRequest.svg(Files.readAllBytes(sample)), SHORT);
            assertEquals(null, o.code(), sample + ": " + o);
        }
        for (String name : List.of("shapes", "text", "local-use", "gradient", "data-image", "doctype")) {
            Renders.Outcome o = R.render(RenderRequest.svg(Corpus.bytes("ok/" + name + ".svg")), SHORT);
            assertEquals(null, o.code(), name + ": " + o);
        }
        try (InputStream warmup = DocumentRenderHandler.class.getResourceAsStream("warmup.svg")) {
            Renders.Outcome o = R.render(RenderRequest.svg(warmup.readAllBytes()), SHORT);
            assertEquals(null, o.code(), "warmup.svg: " + o);
        }
    }

    /**
     * A document without a cycle and with a chain under the limit that Batik still recurses on
     * until the stack overflows: 30 groups, each nested 150 deep with a {@code <use>} of the next
     * at the bottom. The overflow ends the render at once as LIMIT_EXCEEDED, the watchdog stays
     * healthy, and the same handler renders the next document.
     */
    @Test
    void aStackOverflowInTheRenderIsAnImmediateLimitAndTheWorkerGoesOn() {
        StringBuilder svg = new StringBuilder("<defs>");
        int groups = 30;
        int depth = 150;
        for (int i = 0; i < groups; i++) {
            svg.append("<g id='g").append(i).append("'>").append("<g>".repeat(depth))
                    .append(i + 1 < groups ? "<use xlink:href='#g" + (i + 1) + "'/>" : "<rect width='5' height='5'/>")
                    .append("</g>".repeat(depth)).append("</g>");
        }
        svg.append("</defs><use xlink:href='#g0'/>");
        Renders.Outcome o = R.render(RenderRequest.svg(svg(svg.toString()).getBytes(StandardCharsets.UTF_8)), SHORT);
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
        assertTrue(o.error().message().contains("nests too deeply"), o.toString());
        assertTrue(R.handler().healthy(), "the render thread ended");
        assertTrue(R.stillServes(), "the handler renders the next document");
    }

    /**
     * The reason a recursing document used to run until the deadline: Batik resolves every
     * reference against the document's base, and for the worker's synthetic scheme the JRE looked
     * for a URL handler class and threw (ClassNotFoundException, MalformedURLException) each time,
     * every exception filling in a stack trace as deep as the recursion. Resolving now throws
     * nothing, so the cost of a reference no longer grows with the depth it is made at.
     */
    @Test
    void referencesResolveAgainstTheDocumentBaseWithoutAnyException() throws IOException {
        UrlLockdown.install();
        ParsedURL base = new ParsedURL(UrlLockdown.DOCUMENT_BASE);
        Path dump = Files.createTempFile("qvm-references", ".jfr");
        String thread = Thread.currentThread().getName();
        try (Recording recording = new Recording()) {
            recording.enable("jdk.JavaExceptionThrow");
            recording.enable("jdk.JavaErrorThrow");
            recording.start();
            for (int i = 0; i < 100; i++) {
                ParsedURL local = new ParsedURL(base, "#a" + i);
                assertEquals("qvm-sandbox:/document#a" + i, local.toString());
                assertEquals("a" + i, local.getRef());
                assertTrue(base.sameFile(local));
                assertTrue(base.sameFile(new ParsedURL(base, "document#b")));
                assertTrue(!base.sameFile(new ParsedURL(base, "other#b")));
                assertTrue(!base.sameFile(new ParsedURL("qvm-sandbox://host/document#b")));
            }
            recording.stop();
            recording.dump(dump);
            List<String> thrown = RecordingFile.readAllEvents(dump).stream()
                    .filter(e -> e.getThread() != null && thread.equals(e.getThread().getJavaName()))
                    .map(SelfReferenceTest::describe).toList();
            assertEquals(0, thrown.size(), thrown.size() + " thrown: " + new TreeSet<>(thrown));
        } finally {
            Files.deleteIfExists(dump);
        }
    }

    private static String describe(RecordedEvent e) {
        Object c = e.getValue("thrownClass");
        return c instanceof jdk.jfr.consumer.RecordedClass rc ? rc.getName() : String.valueOf(c);
    }

    /**
     * {@code n} + 1 gradients, each referring to the next by {@code xlink:href} (Batik 1.19 follows
     * no SVG 2 {@code href} on gradients): a chain of {@code n} references ending in red stops.
     */
    private static byte[] gradientChain(int n) {
        StringBuilder s = new StringBuilder("<defs>");
        for (int i = 0; i < n; i++) {
            s.append("<linearGradient id='g").append(i).append("' xlink:href='#g").append(i + 1).append("'/>");
        }
        s.append("<linearGradient id='g").append(n).append("'><stop offset='0' stop-color='red'/>"
                + "<stop offset='1' stop-color='red'/></linearGradient></defs>"
                + "<rect width='100' height='100' fill='url(#g0)'/>");
        return svg(s.toString()).getBytes(StandardCharsets.UTF_8);
    }

    private static String svg(String body) {
        return "<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink' width='100'"
                + " height='100'>" + body + "</svg>";
    }
}
