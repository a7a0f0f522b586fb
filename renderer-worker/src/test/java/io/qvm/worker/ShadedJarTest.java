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
            assertFalse(w.stderr().contains("warm-up"), "warm-up worked from the jar: " + w.stderr());
        }
    }
}
