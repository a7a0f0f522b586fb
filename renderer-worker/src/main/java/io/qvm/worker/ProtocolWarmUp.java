package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameWriter;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Messages;
import io.qvm.protocol.PngHeader;
import io.qvm.protocol.Ready;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.WorkerStatus;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.List;

/**
 * Every frame of a session, written and read back in memory once before HELLO: the HELLO, READY,
 * ECHO, STATUS, RENDER and its answers, an ERROR and GOODBYE, through the same {@link FrameWriter},
 * {@link FrameReader} and {@link Messages} the loop uses.
 *
 * <p>Why: the first frame costs the JVM its first use of Jackson, whose classes (several hundred)
 * are loaded, verified and initialized then. Under emulation, inside gVisor, that was 11.6 s
 * between the worker's "waiting for HELLO" and its READY, a quarter of a cold boot. Done here, it
 * runs on a thread of its own beside the render warm-up (the guest has two vCPUs by default), and
 * the class archive's list (adr/0018), taken from a run that ends before HELLO, now holds those
 * classes too, so later boots map them instead of loading them from the jar.
 *
 * <p>Nothing here reads the guest's entropy or seeds a {@code SecureRandom}: the HELLO's nonce
 * and the STATUS's random bytes are constants, so a template saved after it holds no state that
 * a clone would share.
 */
final class ProtocolWarmUp {

    private static final Limits LIMITS = new Limits(1 << 16, 1 << 16, 1 << 16, 256, 1, 60_000);

    private ProtocolWarmUp() {
    }

    /**
     * Writes each frame of a session and reads it back.
     *
     * @return the frames read back, in order (what a test checks)
     */
    static List<Frame> run() throws IOException {
        FrameLimits any = FrameLimits.ofBody(LIMITS.maxRequestBytes());
        byte[] svg = "<svg xmlns='http://www.w3.org/2000/svg' width='2' height='2'/>".getBytes(
                java.nio.charset.StandardCharsets.US_ASCII);
        RenderRequest request = RenderRequest.svg(svg);
        List<Frame> frames = List.of(
                Messages.toFrame(new Hello("warm-up", FrameCodec.VERSION, LIMITS)),
                Messages.toFrame(new Ready("warm-up", "warm-up", List.of(WorkerLoop.CAPABILITY_ECHO))),
                Frame.of(FrameKind.ECHO, 1, new byte[] {1}),
                WorkerLoop.echo(new Frame(FrameKind.ECHO, 2,
                        com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode().put("replyBytes", 1),
                        null), LIMITS),
                Frame.of(FrameKind.STATUS, 3, (byte[]) null),
                Messages.toFrame(WorkerStatus.of(0, new byte[WorkerStatus.RANDOM_BYTES], 0, 0), 3),
                Messages.toFrame(request, 4),
                Messages.toFrame(new RenderResult(PngHeader.signature(), 1, 1, 0), 4),
                Messages.toFrame(new ErrorReply(5, ErrorCode.BAD_REQUEST, "warm-up")),
                Frame.of(FrameKind.GOODBYE, 6, (byte[]) null));
        ByteArrayOutputStream wire = new ByteArrayOutputStream();
        FrameWriter writer = new FrameWriter(wire, any);
        for (Frame f : frames) {
            writer.write(f);
        }
        FrameReader reader = new FrameReader(new ByteArrayInputStream(wire.toByteArray()), any);
        List<Frame> back = new java.util.ArrayList<>();
        for (Frame f = reader.read(); f != null; f = reader.read()) {
            back.add(f);
        }
        // What the loop and the render handler make of the requests.
        Messages.hello(back.get(0));
        Messages.renderRequest(back.get(6));
        return back;
    }
}
