package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.awt.image.BufferedImage;
import java.io.InputStream;
import java.io.PrintStream;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The documents a template VM and a pool's fresh sandboxes are warmed with (qemu-backend's
 * {@code io/qvm/warmup}) render with the worker's real renderer under a default sandbox's
 * limits, with pixels drawn: a document the worker refused would warm nothing and only say so in
 * a template build's progress. In-process, like renderer-worker's own tests; the template build
 * proves the guest does the same.
 */
@Tag("unit")
class TemplateWarmUpDocumentsTest {

    /** renderer-worker's HostileCorpusTest.GUEST_LIMITS: SandboxConfig's default size limits, a 120 s deadline. */
    private static final Limits DEFAULTS = new Limits(32 << 20, 64 << 20, 50_000_000, 16_384, 1000, 120_000);

    @Test
    void everyWarmUpDocumentRendersWithItsPixels() throws Exception {
        DocumentRenderHandler handler = new DocumentRenderHandler(new Log(new PrintStream(System.err, true)));
        long id = 0;
        for (String name : List.of("text.svg", "shapes.svg", "page.pdf", "hello.svg", "hello.pdf")) {
            byte[] doc;
            try (InputStream in = TemplateWarmUpDocumentsTest.class.getResourceAsStream("/io/qvm/warmup/" + name)) {
                doc = in.readAllBytes();
            }
            RenderRequest request = name.endsWith(".pdf") ? RenderRequest.pdf(doc) : RenderRequest.svg(doc);
            Frame reply = handler.handle(Messages.toFrame(request, ++id), DEFAULTS);
            assertEquals(FrameKind.RENDER_RESULT, reply.kind(), name + ": " + reply);
            RenderResult r = Messages.renderResult(reply, request, DEFAULTS);
            BufferedImage img = Pixels.decode(r.png());
            assertTrue(Pixels.differing(img, 0, 0, img.getWidth(), img.getHeight(), 0xFFFFFFFF) > img.getWidth(),
                    name + " draws something");
        }
    }
}
