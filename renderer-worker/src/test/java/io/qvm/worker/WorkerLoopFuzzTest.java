package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameScript;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RawFrames;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Tag;

/**
 * The worker's request handling — {@link WorkerLoop}, from the frames on its stdin to the answers
 * on its stdout — on what a hostile or broken host could send: usually a sound HELLO with limits
 * the fuzzer picks, then a {@link FrameScript} stream of requests (headers shaped like each
 * kind's), other kinds, noise, broken prefixes, frames above the limits and a cut-off frame. The
 * renderer is a stand-in that decodes each RENDER the way {@link DocumentRenderHandler} does
 * ({@link Messages#renderRequest}, BAD_REQUEST when refused) and answers a RENDER_RESULT as large
 * as the request's width, so the response limit is met too; the renderers themselves have their
 * own corpus tests.
 *
 * <p>Whatever arrives: the loop ends with status 0 and throws nothing; what it writes is frames
 * and nothing else, each an answer kind, nothing before READY but the ERROR refusing a HELLO,
 * GOODBYE only last; every ERROR has a code of the contract and a message; within the first
 * session no answer is above that HELLO's {@code maxResponseBytes}; and there are never more
 * answers than frame prefixes in the input.
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class WorkerLoopFuzzTest {

    private static final FrameLimits SCRIPT = new FrameLimits(1024, 4096);
    private static final FrameLimits ANY = new FrameLimits(FrameLimits.HEADER_CEILING, FrameLimits.BODY_CEILING);
    private static final Set<FrameKind> ANSWERS = Set.of(FrameKind.READY, FrameKind.ERROR, FrameKind.ECHO_REPLY,
            FrameKind.RENDER_RESULT, FrameKind.STATUS_REPLY, FrameKind.GOODBYE);
    private static final Path URANDOM = Path.of("/dev/urandom");
    private static final PrintStream NO_LOG = new PrintStream(OutputStream.nullOutputStream());

    @FuzzTest(maxDuration = "10s")
    void whateverTheHostSendsTheWorkerAnswersInFramesWithinItsLimits(FuzzedDataProvider data) throws IOException {
        Limits limits = null;
        ByteArrayOutputStream in = new ByteArrayOutputStream();
        if (data.consumeInt(0, 7) != 0) {
            limits = new Limits(data.consumeInt(1, 8192), data.consumeInt(1, 8192), data.consumeLong(1, 1L << 40),
                    data.consumeInt(1, 1 << 16), data.consumeInt(1, 100), data.consumeLong(1, 1L << 40));
            in.writeBytes(RawFrames.encode(Messages.toFrame(new Hello("fuzz-nonce", FrameCodec.VERSION, limits))));
        }
        in.writeBytes(FrameScript.from(data, SCRIPT).bytes());
        byte[] input = in.toByteArray();

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = new WorkerLoop(new ByteArrayInputStream(input), out, new DecodingRenderer(), new Log(NO_LOG),
                "fuzz", new Entropy(URANDOM), false).run();
        assertEquals(0, status, "the loop ends normally");

        FrameReader reader = new FrameReader(new ByteArrayInputStream(out.toByteArray()), ANY);
        List<Frame> answers = new ArrayList<>();
        try {
            for (Frame f; (f = reader.read()) != null; ) {
                answers.add(f);
            }
        } catch (FrameException e) {
            throw new AssertionError("the worker wrote something that is not a sound frame", e);
        }
        assertEquals(0, reader.discardedBytes(), "the worker writes frames and nothing else");
        assertTrue(answers.size() <= input.length / FrameCodec.PREFIX_BYTES, "more answers than requests");

        int sessions = 0;
        for (int i = 0; i < answers.size(); i++) {
            Frame a = answers.get(i);
            assertTrue(ANSWERS.contains(a.kind()), "not an answer: " + a);
            if (a.kind() == FrameKind.READY) {
                sessions++;
            }
            if (sessions == 0) {
                assertEquals(FrameKind.ERROR, a.kind(), "before READY only a refused HELLO is answered: " + a);
            }
            if (a.kind() == FrameKind.GOODBYE) {
                assertEquals(answers.size() - 1, i, "GOODBYE is the last answer");
            }
            if (a.kind() == FrameKind.ERROR) {
                ErrorReply e = Messages.errorReply(a);
                assertEquals(a.header().path("code").asText(), e.code().name(), "a code of the contract: " + a);
                assertFalse(e.message().isEmpty(), "an error says why: " + a);
            }
            if (sessions == 1 && limits != null) {
                assertTrue(a.body().length <= limits.maxResponseBytes(),
                        "an answer above maxResponseBytes " + limits.maxResponseBytes() + ": " + a);
            }
        }
    }

    /**
     * A stand-in renderer: decodes the request like {@link DocumentRenderHandler} and answers a
     * "PNG" of as many bytes as the requested width (or ten), so large answers meet the limit.
     */
    private static final class DecodingRenderer implements RenderHandler {
        private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

        @Override
        public List<String> capabilities() {
            return List.of(DocumentRenderHandler.CAPABILITY_SVG);
        }

        @Override
        public void warmUp() {
        }

        @Override
        public Frame handle(Frame request, Limits limits) {
            RenderRequest r;
            try {
                r = Messages.renderRequest(request);
            } catch (IllegalArgumentException e) {
                return Messages.toFrame(new ErrorReply(request.requestId(), ErrorCode.BAD_REQUEST, e.getMessage()));
            }
            byte[] png = RawFrames.concat(PNG_SIGNATURE, new byte[r.width() == 0 ? 10 : r.width()]);
            return Messages.toFrame(new RenderResult(png, Math.max(1, r.width()), Math.max(1, r.height()), 0),
                    request.requestId());
        }
    }
}
