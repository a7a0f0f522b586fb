package io.qvm.worker;

import io.qvm.protocol.Messages;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Ready;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Rendering through {@link Main} in a child JVM over stdin/stdout, with corpus documents. */
@Tag("unit")
@Tag("security")
@Timeout(120)
class MainRenderProtocolTest {

    @Test
    void rendersRefusesAndKeepsServing() throws Exception {
        try (TrapServer trap = new TrapServer(); ChildWorker w = ChildWorker.start()) {
            Ready ready = w.handshake(ChildWorker.LIMITS);
            assertTrue(ready.capabilities().containsAll(java.util.List.of("echo", "render-svg", "render-pdf")));

            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("ok/text.svg")), 1));
            RenderResult svg = Messages.renderResult(w.receive());
            assertEquals(300, svg.width());
            assertTrue(Pixels.differing(Pixels.decode(svg.png()), 10, 20, 290, 80, 0xFFFFFFFF) > 500);

            w.send(Messages.toFrame(RenderRequest.svg(Corpus.withBase("hostile/image-http.svg", trap.base())), 2));
            assertEquals(ErrorCode.UNSUPPORTED, Messages.errorReply(w.receive()).code());
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("hostile/billion-laughs.svg")), 3));
            assertEquals(ErrorCode.LIMIT_EXCEEDED, Messages.errorReply(w.receive()).code());
            w.send(Messages.toFrame(RenderRequest.pdf(new byte[] {'%', 'P', 'D', 'F'}), 4));
            assertEquals(ErrorCode.PARSE_ERROR, Messages.errorReply(w.receive()).code());

            Frame badHeader = new Frame(FrameKind.RENDER, 5,
                    JsonNodeFactory.instance.objectNode().put("type", "gif"), new byte[] {1});
            w.send(badHeader);
            ErrorReply bad = Messages.errorReply(w.receive());
            assertEquals(5, bad.requestId());
            assertEquals(ErrorCode.BAD_REQUEST, bad.code());

            w.send(Messages.toFrame(RenderRequest.pdf(Pdfs.squareAndText()).withDpi(72), 6));
            Frame f = w.receive();
            assertEquals(6, f.requestId());
            RenderResult pdf = Messages.renderResult(f);
            assertEquals(200, pdf.width());
            assertTrue(Pixels.near(Pixels.decode(pdf.png()), 50, 50, 0xFFFF0000));

            w.send(Frame.of(FrameKind.GOODBYE, 7, (byte[]) null));
            assertEquals(FrameKind.GOODBYE, w.receive().kind());
            assertEquals(0, w.waitFor(30), w.stderr());
            assertEquals(java.util.List.of(), trap.requests());
            assertTrue(w.stderr().contains("warm in"), w.stderr());
            assertTrue(w.stderr().contains("protocol warm-up: 10 frames in "), w.stderr());
        }
    }

    @Test
    void aRasterBeyondTheHeapIsRefusedBeforeItIsAllocated() throws Exception {
        try (ChildWorker w = ChildWorker.start("-Xmx48m")) {
            w.handshake(new io.qvm.protocol.Limits(4 << 20, 64 << 20, 64_000_000, 8000, 20, 60_000));
            // An 8000 x 8000 ARGB raster is 256 MB: within the limits given, beyond this heap.
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("ok/shapes.svg")).withSize(8000, 8000), 1));
            assertEquals(ErrorCode.LIMIT_EXCEEDED, Messages.errorReply(w.receive()).code());
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("ok/shapes.svg")), 2));
            assertEquals(FrameKind.RENDER_RESULT, w.receive().kind(), w.stderr());
            assertFalse(w.stderr().contains(MemoryGuard.RECOVERED_LINE), "refused by the estimate, not the guard");
        }
    }

    @Test
    void dashedTextIsRefusedByTheEstimateBeforeItCanExhaustTheHeap() throws Exception {
        try (ChildWorker w = ChildWorker.start("-Xmx128m")) {
            w.handshake(ChildWorker.LIMITS);
            // The stroked outline of a 10^5 px glyph dashed every 0.01 px is far beyond this heap.
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("bombs/dash-text.svg")), 1));
            assertEquals(ErrorCode.LIMIT_EXCEEDED, Messages.errorReply(w.receive()).code(), w.stderr());
            w.send(Messages.toFrame(RenderRequest.svg(Corpus.bytes("ok/shapes.svg")), 2));
            assertEquals(FrameKind.RENDER_RESULT, w.receive().kind(), w.stderr());
            assertFalse(w.stderr().contains(MemoryGuard.RECOVERED_LINE), "refused by the estimate: " + w.stderr());
        }
    }
}
