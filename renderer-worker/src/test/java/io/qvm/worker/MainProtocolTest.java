package io.qvm.worker;

import io.qvm.protocol.Messages;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import io.qvm.protocol.WorkerStatus;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link Main} in a child JVM over its real stdin and stdout: the protocol as the guest runs it. */
@Tag("unit")
@Timeout(120)
class MainProtocolTest {

    private static final FrameLimits ANY = FrameLimits.ofBody(FrameLimits.BODY_CEILING);

    @Test
    void handshakeEchoOversizeAndGoodbye() throws Exception {
        try (ChildWorker w = ChildWorker.start()) {
            Ready ready = w.handshake(ChildWorker.LIMITS);
            assertTrue(ready.capabilities().contains("echo"), ready.toString());

            byte[] mib = new byte[1 << 20];
            new Random(42).nextBytes(mib);
            w.send(Frame.of(FrameKind.ECHO, 7, mib));
            Frame echo = w.receive();
            assertEquals(FrameKind.ECHO_REPLY, echo.kind());
            assertEquals(7, echo.requestId());
            assertArrayEquals(mib, echo.body());

            byte[] tooBig = new byte[ChildWorker.LIMITS.maxRequestBytes() + 1];
            w.send(Frame.of(FrameKind.ECHO, 8, tooBig));
            ErrorReply err = Messages.errorReply(w.receive());
            assertEquals(8, err.requestId());
            assertEquals(ErrorCode.TOO_LARGE, err.code());

            w.send(Frame.of(FrameKind.ECHO, 9, "still here".getBytes(StandardCharsets.UTF_8)));
            Frame after = w.receive();
            assertEquals(FrameKind.ECHO_REPLY, after.kind());
            assertEquals("still here", new String(after.body(), StandardCharsets.UTF_8));

            w.send(Frame.of(FrameKind.GOODBYE, 10, (byte[]) null));
            Frame bye = w.receive();
            assertEquals(FrameKind.GOODBYE, bye.kind());
            assertEquals(10, bye.requestId());
            assertEquals(0, w.waitFor(30), w.stderr());
            assertNull(w.receiveOrEnd());
        }
    }

    @Test
    void statusReportsTheWorkerWithFreshRandomness() throws Exception {
        try (ChildWorker w = ChildWorker.start()) {
            w.handshake(ChildWorker.LIMITS);
            w.send(Frame.of(FrameKind.ECHO, 1, new byte[] {1}));
            assertEquals(FrameKind.ECHO_REPLY, w.receive().kind());
            w.send(Frame.of(FrameKind.STATUS, 2, (byte[]) null));
            Frame first = w.receive();
            assertEquals(2, first.requestId());
            w.send(Frame.of(FrameKind.STATUS, 3, (byte[]) null));
            WorkerStatus a = Messages.workerStatus(first);
            WorkerStatus b = Messages.workerStatus(w.receive());
            assertEquals(1, a.requestsServed());
            assertEquals(2, b.requestsServed());
            assertEquals(1, b.sessions());
            assertNotEquals(a.random(), b.random());
            assertTrue(Math.abs(System.currentTimeMillis() - b.wallClockMillis()) < 60_000, b.toString());
        }
    }

    @Test
    void garbageAndStaleFramesBeforeHelloAreSkipped() throws Exception {
        try (ChildWorker w = ChildWorker.start()) {
            ByteArrayOutputStream junk = new ByteArrayOutputStream();
            junk.write("console noise\nQVMF not a frame QQQ".getBytes(StandardCharsets.US_ASCII));
            byte[] random = new byte[10_000];
            new Random(1).nextBytes(random);
            junk.write(random);
            // A stale frame from an earlier session, and a half-written one.
            junk.write(FrameCodec.encode(Frame.of(FrameKind.ECHO, 3, new byte[100]), ANY));
            byte[] stale = FrameCodec.encode(Frame.of(FrameKind.RENDER, 4, (byte[]) null), ANY);
            junk.write(stale, 0, 10);
            w.sendRaw(junk.toByteArray());

            w.handshake(ChildWorker.LIMITS);
            w.send(Frame.of(FrameKind.ECHO, 11, new byte[] {1, 2, 3}));
            Frame echo = w.receive();
            assertEquals(FrameKind.ECHO_REPLY, echo.kind());
            assertEquals(11, echo.requestId());
            assertTrue(w.stderr().contains("before HELLO"), w.stderr());
        }
    }

    @Test
    void responseAboveTheHostLimitBecomesTooLarge() throws Exception {
        try (ChildWorker w = ChildWorker.start()) {
            Limits small = new Limits(1 << 20, 1000, 4_000_000, 4000, 20, 20_000);
            w.handshake(small);
            w.send(Frame.of(FrameKind.ECHO, 5, new byte[2000]));
            ErrorReply err = Messages.errorReply(w.receive());
            assertEquals(5, err.requestId());
            assertEquals(ErrorCode.TOO_LARGE, err.code());
            w.send(Frame.of(FrameKind.ECHO, 6, new byte[500]));
            assertEquals(FrameKind.ECHO_REPLY, w.receive().kind());
        }
    }

    @Test
    void unknownRequestKindIsBadRequestAndEofExitsZero() throws Exception {
        try (ChildWorker w = ChildWorker.start()) {
            w.handshake(ChildWorker.LIMITS);
            w.send(Frame.of(FrameKind.ECHO_REPLY, 12, (byte[]) null));
            ErrorReply err = Messages.errorReply(w.receive());
            assertEquals(12, err.requestId());
            assertEquals(ErrorCode.BAD_REQUEST, err.code());
            w.closeStdin();
            assertEquals(0, w.waitFor(30), w.stderr());
        }
    }

    @Test
    void stdoutCarriesFramesOnlyEvenWhenCodePrintsToSystemOut() throws Exception {
        // Everything Main logs goes to stderr: the first bytes on stdout must be the READY frame.
        try (ChildWorker w = ChildWorker.start()) {
            w.handshake(ChildWorker.LIMITS);
            w.closeStdin();
            assertEquals(0, w.waitFor(30), w.stderr());
            assertTrue(w.stderr().lines().allMatch(l -> l.startsWith("worker:")), w.stderr());
        }
    }
}
