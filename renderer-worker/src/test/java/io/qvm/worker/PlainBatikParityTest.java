package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.RenderRequest;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.net.URISyntaxException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.apache.batik.bridge.EmbededExternalResourceSecurity;
import org.apache.batik.bridge.ExternalResourceSecurity;
import org.apache.batik.bridge.UserAgent;
import org.apache.batik.transcoder.TranscoderException;
import org.apache.batik.transcoder.TranscoderInput;
import org.apache.batik.transcoder.TranscoderOutput;
import org.apache.batik.transcoder.image.PNGTranscoder;
import org.apache.batik.util.ParsedURL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * No false refusals against plain Batik: every corpus SVG ({@code ok/} and {@code safe/}) that
 * Batik's own {@link PNGTranscoder} renders with external resources off ({@code data:} only, as
 * {@link LockedDownUserAgent} allows) renders in qvm too, at the same size. qvm may render more than
 * Batik: Batik resolves a local {@code #id} inside an embedded SVG against the {@code data:} URL and
 * refuses it ({@code safe/data-svg-local-use.svg}), qvm resolves it in the embedded document.
 */
@Tag("unit")
class PlainBatikParityTest {

    static final List<String> DIRECTORIES = List.of("ok", "safe");
    private static final Renders R = new Renders();

    @BeforeAll
    static void lockDown() {
        UrlLockdown.install(); // plain Batik in this JVM cannot open http/file/jar either
    }

    static Stream<String> documents() {
        List<String> names = new ArrayList<>();
        for (String dir : DIRECTORIES) {
            URL url = PlainBatikParityTest.class.getResource("/corpus/" + dir);
            try {
                String[] files = new File(url.toURI()).list((d, n) -> n.endsWith(".svg"));
                Arrays.sort(files);
                for (String f : files) {
                    names.add(dir + "/" + f);
                }
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        return names.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("documents")
    void whatPlainBatikRendersQvmRendersAtTheSameSize(String name) throws Exception {
        byte[] svg = Corpus.bytes(name);
        BufferedImage batik;
        try {
            batik = plainBatik(svg);
        } catch (TranscoderException e) {
            return; // not a document plain Batik renders: nothing to compare
        }
        BufferedImage qvm = R.render(RenderRequest.svg(svg)).image();
        if (hasOwnSize(svg)) {
            assertEquals(batik.getWidth(), qvm.getWidth(), name + " width");
            assertEquals(batik.getHeight(), qvm.getHeight(), name + " height");
        }
        // Otherwise (a viewBox, no width and height) Batik's transcoder fills its arbitrary 400×400
        // default viewport and qvm takes the viewBox's own size (SvgGeometry): both render, sizes differ.
    }

    /** Whether the root declares an absolute width and height (then both renderers agree on the size). */
    private static boolean hasOwnSize(byte[] svg) throws Exception {
        org.w3c.dom.Element root = SvgParser.parse(svg).getDocumentElement();
        return absolute(root.getAttributeNS(null, "width")) && absolute(root.getAttributeNS(null, "height"));
    }

    private static boolean absolute(String length) {
        return !length.isBlank() && !length.trim().endsWith("%");
    }

    @Test
    void plainBatikRendersTheSafeDocuments() {
        List<String> failed = new ArrayList<>();
        List<String> safe = documents().filter(n -> n.startsWith("safe/")).toList();
        for (String name : safe) {
            try {
                plainBatik(Corpus.bytes(name));
            } catch (Exception e) {
                failed.add(name);
            }
        }
        assertEquals(List.of("safe/data-svg-local-use.svg"), failed, "safe/ documents Batik cannot render");
        assertTrue(safe.size() >= 8, "safe/ documents: " + safe);
    }

    /** Batik's own transcoder and parser, with only data: resources allowed; throws if Batik fails. */
    static BufferedImage plainBatik(byte[] svg) throws Exception {
        TranscoderInput in = new TranscoderInput(new ByteArrayInputStream(svg));
        in.setURI(UrlLockdown.DOCUMENT_BASE);
        ByteArrayOutputStream png = new ByteArrayOutputStream();
        new DataOnlyTranscoder().transcode(in, new TranscoderOutput(png));
        return ImageIO.read(new ByteArrayInputStream(png.toByteArray()));
    }

    /** {@link PNGTranscoder} whose user agent refuses every resource that is not a data: URL. */
    private static final class DataOnlyTranscoder extends PNGTranscoder {
        @Override
        protected UserAgent createUserAgent() {
            return new SVGAbstractTranscoderUserAgent() {
                @Override
                public ExternalResourceSecurity getExternalResourceSecurity(ParsedURL resource, ParsedURL doc) {
                    return new EmbededExternalResourceSecurity(resource);
                }
            };
        }
    }
}
