package io.qvm.worker;

import io.qvm.protocol.Messages;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.WorkerStatus;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link WorkerLoop} in this JVM over byte streams, with a stub renderer: STATUS and the entropy
 * drain on every HELLO.
 */
@Tag("unit")
@Timeout(60)
class WorkerLoopTest {

    private static final FrameLimits ANY = FrameLimits.ofBody(FrameLimits.BODY_CEILING);
    private static final Path URANDOM = Path.of("/dev/urandom");

    @TempDir
    Path tmp;

    private final ByteArrayOutputStream logBytes = new ByteArrayOutputStream();
    private final Log log = new Log(new PrintStream(logBytes, true, StandardCharsets.UTF_8));

    @Test
    void statusCountsRequestsAndSessionsAndEveryHelloDrainsTheDevice() throws Exception {
        assumeTrue(Files.exists(URANDOM), "needs /dev/urandom");
        CountingEntropy entropy = new CountingEntropy(URANDOM);
        List<Frame> out = run(entropy,
                Frame.of(FrameKind.STATUS, 1, (byte[]) null), // before HELLO: skipped, no answer
                hello(),
                Frame.of(FrameKind.STATUS, 2, (byte[]) null),
                Frame.of(FrameKind.ECHO, 3, new byte[] {1, 2}),
                Frame.of(FrameKind.STATUS, 4, (byte[]) null),
                hello(),
                Frame.of(FrameKind.RENDER, 5, (byte[]) null),
                Frame.of(FrameKind.STATUS, 6, (byte[]) null));

        assertEquals(List.of(FrameKind.READY, FrameKind.STATUS_REPLY, FrameKind.ECHO_REPLY, FrameKind.STATUS_REPLY,
                FrameKind.READY, FrameKind.ERROR, FrameKind.STATUS_REPLY), out.stream().map(Frame::kind).toList());
        assertEquals(List.of(Hello.REQUEST_ID, 2L, 3L, 4L, Hello.REQUEST_ID, 5L, 6L),
                out.stream().map(Frame::requestId).toList());
        WorkerStatus first = Messages.workerStatus(out.get(1));
        WorkerStatus second = Messages.workerStatus(out.get(3));
        WorkerStatus third = Messages.workerStatus(out.get(6));
        assertEquals(List.of(0L, 2L, 4L), List.of(first.requestsServed(), second.requestsServed(),
                third.requestsServed()), "ECHO, RENDER and STATUS answered before");
        assertEquals(List.of(1L, 1L, 2L), List.of(first.sessions(), second.sessions(), third.sessions()));
        assertTrue(Math.abs(System.currentTimeMillis() - third.wallClockMillis()) < 60_000, third.toString());
        assertNotEquals(first.random(), second.random(), "each STATUS reads fresh bytes");
        assertNotEquals(second.random(), third.random(), "each STATUS reads fresh bytes");

        // The device is opened afresh for every use: a full drain per HELLO, 16 bytes per STATUS.
        assertEquals(List.of(Entropy.DRAIN_BYTES, 16, 16, Entropy.DRAIN_BYTES, 16), entropy.bytesPerOpen);
        assertTrue(log().contains("skipped 1 frames"), log());
    }

    @Test
    void aDeviceThatEndsEarlyIsLoggedOnceAndTheSessionStillStarts() throws Exception {
        Path shortFile = Files.write(tmp.resolve("short"), new byte[100]);
        List<Frame> out = run(new Entropy(shortFile), hello(), Frame.of(FrameKind.ECHO, 2, new byte[] {7}));

        assertEquals(List.of(FrameKind.READY, FrameKind.ECHO_REPLY), out.stream().map(Frame::kind).toList());
        assertEquals(1, log().lines().filter(l -> l.contains("cannot drain")).count(), log());
        assertTrue(log().contains("EOFException after 100 bytes"), log());
    }

    @Test
    void noDeviceMeansNoDrainAndStatusIsAnInternalError() throws Exception {
        List<Frame> out = run(new Entropy(tmp.resolve("absent")), hello(),
                Frame.of(FrameKind.STATUS, 2, (byte[]) null));

        assertEquals(FrameKind.READY, out.get(0).kind());
        ErrorReply err = Messages.errorReply(out.get(1));
        assertEquals(2, err.requestId());
        assertEquals(ErrorCode.INTERNAL, err.code());
        assertTrue(log().lines().noneMatch(l -> l.contains("drain")), "a missing device is skipped silently");
    }

    @Test
    void echoWithReplyBytesAnswersThatManyZerosWithinTheResponseLimit() throws Exception {
        com.fasterxml.jackson.databind.node.ObjectNode want = com.fasterxml.jackson.databind.node.JsonNodeFactory
                .instance.objectNode().put("replyBytes", 5000);
        com.fasterxml.jackson.databind.node.ObjectNode tooMany = com.fasterxml.jackson.databind.node.JsonNodeFactory
                .instance.objectNode().put("replyBytes", (1 << 20) + 1);
        com.fasterxml.jackson.databind.node.ObjectNode bad = com.fasterxml.jackson.databind.node.JsonNodeFactory
                .instance.objectNode().put("replyBytes", -1);
        List<Frame> out = run(new Entropy(tmp.resolve("absent")), hello(),
                new Frame(FrameKind.ECHO, 2, want, new byte[300]),
                new Frame(FrameKind.ECHO, 3, tooMany, null),
                new Frame(FrameKind.ECHO, 4, bad, null),
                Frame.of(FrameKind.ECHO, 5, new byte[] {9, 8}));

        assertEquals(FrameKind.ECHO_REPLY, out.get(1).kind());
        assertEquals(5000, out.get(1).body().length, "replyBytes zeros, the request body dropped");
        assertEquals(0, out.get(1).body()[4999]);
        assertEquals(ErrorCode.TOO_LARGE, Messages.errorReply(out.get(2)).code(), "checked before allocating");
        assertEquals(ErrorCode.BAD_REQUEST, Messages.errorReply(out.get(3)).code());
        assertArrayEquals(new byte[] {9, 8}, out.get(4).body(), "a plain ECHO still echoes");
    }

    @Test
    void theProtocolWarmUpRunsBeforeHelloAndLeavesTheSessionAsItWas() throws Exception {
        List<Frame> out = run(new Entropy(tmp.resolve("absent")), true, hello(),
                Frame.of(FrameKind.ECHO, 2, new byte[] {3}));

        assertEquals(List.of(FrameKind.READY, FrameKind.ECHO_REPLY), out.stream().map(Frame::kind).toList(),
                "nothing of the warm-up reaches the answer stream");
        List<String> lines = log().lines().toList();
        int warm = indexOf(lines, "protocol warm-up: 10 frames in ");
        int waiting = indexOf(lines, "waiting for HELLO");
        assertTrue(warm >= 0 && warm < waiting, "the warm-up ends before HELLO is read: " + lines);
    }

    @Test
    void aLoopForTestsDoesNotWarmUpTheProtocol() throws Exception {
        run(new Entropy(tmp.resolve("absent")), hello());
        assertTrue(log().lines().noneMatch(l -> l.contains("protocol warm-up")), log());
    }

    private static int indexOf(List<String> lines, String part) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(part)) {
                return i;
            }
        }
        return -1;
    }

    /** Feeds {@code requests} then end of input; returns every frame the loop wrote. */
    private List<Frame> run(Entropy entropy, Frame... requests) throws IOException {
        return run(entropy, false, requests);
    }

    private List<Frame> run(Entropy entropy, boolean warmUpProtocol, Frame... requests) throws IOException {
        ByteArrayOutputStream in = new ByteArrayOutputStream();
        for (Frame f : requests) {
            in.write(FrameCodec.encode(f, ANY));
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = new WorkerLoop(new ByteArrayInputStream(in.toByteArray()), out, new StubRenderer(), log, "test",
                entropy, warmUpProtocol).run();
        assertEquals(0, status);
        FrameReader reader = new FrameReader(new ByteArrayInputStream(out.toByteArray()), ANY);
        List<Frame> frames = new ArrayList<>();
        for (Frame f; (f = reader.read()) != null; ) {
            frames.add(f);
        }
        return frames;
    }

    private static Frame hello() {
        return Messages.toFrame(Hello.fresh(new Limits(1 << 20, 1 << 20, 4_000_000, 4000, 20, 20_000)));
    }

    private String log() {
        return logBytes.toString(StandardCharsets.UTF_8);
    }

    /** Answers every RENDER with UNSUPPORTED. */
    private static final class StubRenderer implements RenderHandler {
        @Override
        public List<String> capabilities() {
            return List.of();
        }

        @Override
        public void warmUp() {
        }

        @Override
        public Frame handle(Frame request, Limits limits) {
            return Messages.toFrame(new ErrorReply(request.requestId(), ErrorCode.UNSUPPORTED, "stub"));
        }
    }

    /** Records how many bytes were read through each opening of the device. */
    private static final class CountingEntropy extends Entropy {
        final List<Integer> bytesPerOpen = new ArrayList<>();

        CountingEntropy(Path device) {
            super(device);
        }

        @Override
        InputStream open() throws IOException {
            int slot = bytesPerOpen.size();
            bytesPerOpen.add(0);
            return new FilterInputStream(super.open()) {
                @Override
                public int read() throws IOException {
                    int b = super.read();
                    if (b >= 0) {
                        bytesPerOpen.set(slot, bytesPerOpen.get(slot) + 1);
                    }
                    return b;
                }

                @Override
                public int read(byte[] buf, int off, int len) throws IOException {
                    int n = super.read(buf, off, len);
                    if (n > 0) {
                        bytesPerOpen.set(slot, bytesPerOpen.get(slot) + n);
                    }
                    return n;
                }
            };
        }
    }
}
