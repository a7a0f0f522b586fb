package io.qvm.worker;

import io.qvm.protocol.Messages;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.awt.image.BufferedImage;
import java.io.PrintStream;
import java.io.OutputStream;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One in-process {@link DocumentRenderHandler}, shared by a test class (so "keeps serving" means
 * the same handler), driven through frames exactly as the loop drives it.
 */
final class Renders {

    static final Limits LIMITS = new Limits(4 << 20, 8 << 20, 4_000_000, 4000, 20, 20_000);

    /** Either an image or a typed error. */
    record Outcome(RenderResult result, ErrorReply error) {
        ErrorCode code() {
            return error == null ? null : error.code();
        }

        BufferedImage image() {
            if (result == null) {
                throw new AssertionError("expected an image, got " + error);
            }
            return Pixels.decode(result.png());
        }

        @Override
        public String toString() {
            return result != null ? result.toString() : error.toString();
        }
    }

    private final DocumentRenderHandler handler;
    private final AtomicLong ids = new AtomicLong(100);

    Renders() {
        this.handler = new DocumentRenderHandler(new Log(new PrintStream(OutputStream.nullOutputStream())));
    }

    DocumentRenderHandler handler() {
        return handler;
    }

    Outcome render(RenderRequest r) {
        return render(r, LIMITS);
    }

    Outcome render(RenderRequest r, Limits limits) {
        return handle(Messages.toFrame(r, ids.incrementAndGet()), limits);
    }

    Outcome handle(Frame request, Limits limits) {
        Frame f = handler.handle(request, limits);
        if (f.requestId() != request.requestId()) {
            throw new AssertionError("answer carries id " + f.requestId() + ", request had " + request.requestId());
        }
        if (f.kind() == FrameKind.RENDER_RESULT) {
            return new Outcome(Messages.renderResult(f), null);
        }
        return new Outcome(null, Messages.errorReply(f));
    }

    /** A tiny known-good SVG: proves the handler still serves. */
    boolean stillServes() {
        Outcome o = render(RenderRequest.svg(Corpus.bytes("ok/shapes.svg")));
        return o.result() != null && o.result().width() == 200;
    }
}
