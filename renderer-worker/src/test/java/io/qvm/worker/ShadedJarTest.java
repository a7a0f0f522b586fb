package io.qvm.worker;

import io.qvm.protocol.Messages;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Ready;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * The shaded jar the guest runs ({@code java -jar target/renderer-worker.jar}): its manifest, its
 * merged service files and its minimised classes must still serve. Runs when a previous
 * {@code mvn package} left the jar in {@code target/} (surefire runs before the package phase).
 */
@Tag("unit")
@Timeout(120)
@EnabledIf("io.qvm.worker.ChildWorker#shadedJarExists")
class ShadedJarTest {

    @Test
    void theJarStartsAndServes() throws Exception {
        try (ChildWorker w = ChildWorker.startJar(ChildWorker.shadedJar())) {
            Ready ready = w.handshake(ChildWorker.LIMITS);
            assertNotEquals(WorkerVersion.UNKNOWN, ready.version(), "Implementation-Version from the manifest");
            w.send(Frame.of(FrameKind.ECHO, 1, new byte[] {4, 5, 6}));
            assertArrayEquals(new byte[] {4, 5, 6}, w.receive().body());
            // Batik and PDFBox from the minimised jar, with merged service files and Batik's own resources.
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("ok/text.svg")), 3));
            RenderResult svg = Messages.renderResult(w.receive());
            assertTrue(Pixels.differing(Pixels.decode(svg.png()), 10, 20, 290, 80, 0xFFFFFFFF) > 500);
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("ok/data-image.svg")), 4));
            assertTrue(Pixels.near(Pixels.decode(Messages.renderResult(w.receive()).png()), 20, 20, 0xFFFF0000));
            w.send(Messages.toFrame(RenderRequest.pdf(Pdfs.squareAndText()), 5));
            RenderResult pdf = Messages.renderResult(w.receive());
            assertTrue(Pixels.differing(Pixels.decode(pdf.png()), 140, 40, 267, 100, 0xFFFFFFFF) > 300);
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("hostile/xxe-file.svg")), 6));
            assertEquals(ErrorCode.UNSUPPORTED, Messages.errorReply(w.receive()).code());
            w.send(Frame.of(FrameKind.GOODBYE, 2, (byte[]) null));
            assertEquals(FrameKind.GOODBYE, w.receive().kind());
            assertEquals(0, w.waitFor(30), w.stderr());
            assertTrue(w.stderr().lines().allMatch(l -> l.startsWith("worker:")), w.stderr());
            // Worked from the jar: the render warm-up logs only when a document is missing, unreadable
            // or failed; the protocol warm-up logs the frames it made, or that it failed.
            assertEquals(List.of("worker: protocol warm-up: 10 frames"), w.stderr().lines()
                    .filter(l -> l.contains("warm-up")).map(l -> l.replaceAll(" in \\d+ ms$", "")).toList(),
                    "warm-up worked from the jar: " + w.stderr());
        }
    }

    /**
     * The BOM cyclonedx-maven-plugin wrote for the runtime closure (execution worker-bom) is packed
     * into the jar, where the release reads it from inside the image (io.qvm.release.WorkerBom):
     * every artifact with its version and SHA-256, no test or provided scope.
     */
    @Test
    void theJarCarriesTheBomOfItsClosure() throws Exception {
        com.fasterxml.jackson.databind.JsonNode bom;
        try (java.util.zip.ZipFile jar = new java.util.zip.ZipFile(ChildWorker.shadedJar().toFile())) {
            java.util.zip.ZipEntry e = jar.getEntry("META-INF/qvm/worker.cdx.json");
            assertTrue(e != null, "the jar has META-INF/qvm/worker.cdx.json");
            bom = new com.fasterxml.jackson.databind.ObjectMapper().readTree(jar.getInputStream(e));
        }
        assertEquals("CycloneDX", bom.path("bomFormat").asText());
        assertEquals("qvm-renderer-worker", bom.path("metadata").path("component").path("name").asText());
        java.util.Map<String, String> versions = new java.util.TreeMap<>();
        for (com.fasterxml.jackson.databind.JsonNode c : bom.path("components")) {
            versions.put(c.path("group").asText() + ":" + c.path("name").asText(), c.path("version").asText());
            boolean sha256 = false;
            for (com.fasterxml.jackson.databind.JsonNode h : c.path("hashes")) {
                sha256 |= h.path("alg").asText().equals("SHA-256") && h.path("content").asText().matches("[0-9a-f]{64}");
            }
            assertTrue(sha256, "a SHA-256 for " + c);
            assertNotEquals("test", c.path("scope").asText(), c.toString());
        }
        for (String a : new String[] {"io.qvm:qvm-protocol", "org.apache.pdfbox:pdfbox", "org.apache.xmlgraphics:batik-transcoder",
            "com.fasterxml.jackson.core:jackson-databind"}) {
            assertTrue(versions.containsKey(a), a + " in " + versions);
        }
        assertFalse(versions.keySet().stream().anyMatch(k -> k.startsWith("org.junit") || k.contains("jazzer")),
                "no test dependency: " + versions);
    }
}
