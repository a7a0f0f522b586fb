package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderRequest;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** {@link ProtocolWarmUp}: every kind of frame a session carries, written and read back whole. */
@Tag("unit")
class ProtocolWarmUpTest {

    @Test
    void everyFrameOfASessionComesBackAsWritten() throws Exception {
        List<Frame> back = ProtocolWarmUp.run();
        assertEquals(List.of(FrameKind.HELLO, FrameKind.READY, FrameKind.ECHO, FrameKind.ECHO_REPLY, FrameKind.STATUS,
                FrameKind.STATUS_REPLY, FrameKind.RENDER, FrameKind.RENDER_RESULT, FrameKind.ERROR, FrameKind.GOODBYE),
                back.stream().map(Frame::kind).toList());
        assertEquals("warm-up", Messages.hello(back.get(0)).nonce());
        assertEquals("warm-up", Messages.ready(back.get(1)).nonce());
        assertArrayEquals(new byte[1], back.get(3).body(), "the ECHO's replyBytes: one zero byte");
        assertEquals(0, Messages.workerStatus(back.get(5)).requestsServed());
        assertEquals(RenderRequest.Type.SVG, Messages.renderRequest(back.get(6)).type());
        assertEquals(1, Messages.renderResult(back.get(7)).width());
        assertEquals(ErrorCode.BAD_REQUEST, Messages.errorReply(back.get(8)).code());
    }
}
