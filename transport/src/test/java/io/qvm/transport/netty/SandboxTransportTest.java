package io.qvm.transport.netty;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.transport.TransportException;
import io.qvm.transport.internal.FrameDispatcher;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.WorkerErrorException;
import io.qvm.transport.testing.FakeWorker;
import io.qvm.transport.testing.FakeWorker.Effect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The transports against a {@link FakeWorker} on real sockets: AF_UNIX through epoll and through
 * NIO, loopback TCP, and the vsock transport's adopted-socket path (over AF_UNIX: the only part of
 * vsock that can run without a vsock device).
 */
@Tag("unit")
class SandboxTransportTest {

    static final Duration LONG = Duration.ofSeconds(30);
    static final Limits LIMITS = new Limits(32 << 20, 20 << 20, 4_000_000, 4096, 10, 30_000);

    /** How the host reaches the fake worker. */
    enum Path_ {
        SERIAL_EPOLL, SERIAL_NIO, TCP, VSOCK_ADOPTED_UNIX
    }

    private Path dir;
    private FakeWorker worker;
    private SandboxTransport transport;

    @BeforeEach
    void dir() throws Exception {
        dir = Files.createTempDirectory(Path.of("/tmp"), "qvmt");
    }

    @AfterEach
    void cleanUp() throws Exception {
        if (transport != null) {
            transport.close();
        }
        if (worker != null) {
            worker.close();
        }
        Files.deleteIfExists(dir.resolve("w.sock"));
        Files.deleteIfExists(dir);
    }

    private SandboxTransport open(Path_ path, FakeWorker.Builder script) throws Exception {
        switch (path) {
            case TCP -> {
                worker = script.tcp();
                transport = TcpTransport.connect(worker.tcpAddress(), LIMITS, LONG, () -> true);
            }
            case SERIAL_NIO -> {
                worker = script.unix(dir.resolve("w.sock"));
                transport = SerialTransport.connect(worker.socketPath(), LIMITS, LONG, () -> true, NettyIo.NIO);
            }
            case SERIAL_EPOLL -> {
                worker = script.unix(dir.resolve("w.sock"));
                transport = SerialTransport.connect(worker.socketPath(), LIMITS, LONG, () -> true, NettyIo.EPOLL);
            }
            case VSOCK_ADOPTED_UNIX -> {
                worker = script.unix(dir.resolve("w.sock"));
                transport = AdoptedUnix.connect(worker.socketPath(), LIMITS);
            }
        }
        return transport;
    }

    private SandboxTransport openReady(Path_ path, FakeWorker.Builder script) throws Exception {
        SandboxTransport t = open(path, script);
        t.handshake(Hello.fresh(LIMITS), LONG);
        return t;
    }

    private static byte[] body(long seed, int n) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static Frame echo(byte[] body) {
        return Frame.of(FrameKind.ECHO, 0, body);
    }

    private static Throwable failure(CompletableFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
        return e.getCause();
    }

    @ParameterizedTest
    @EnumSource(Path_.class)
    void handshakeSkipsStaleBytesAndAStaleReadyWithAnotherNonce(Path_ path) throws Exception {
        SandboxTransport t = open(path, FakeWorker.builder()
                .onConnect(FakeWorker.garbage(500, 1))
                .onConnect(FakeWorker.fakeMagic())
                .beforeReady(FakeWorker.staleReady("someone-elses-nonce"))
                .beforeReady(FakeWorker.garbage(100, 2))
                .version("fake-9").capabilities(List.of("echo", "svg")));
        Hello hello = Hello.fresh(LIMITS);
        Ready ready = t.handshake(hello, LONG);
        assertEquals(hello.nonce(), ready.nonce());
        assertEquals("fake-9", ready.version());
        assertEquals(List.of("echo", "svg"), ready.capabilities());
        assertEquals(hello, worker.hellos().get(0), "the worker saw our HELLO with our limits");
        assertArrayEquals(new byte[] {1, 2}, t.request(echo(new byte[] {1, 2})).get(30, TimeUnit.SECONDS).body());
        assertFalse(t.closed().isDone(), "what came before READY is the session's resync, no violation");
    }

    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "TCP"})
    void handshakeDeadlineSaysWhatWasDiscarded(Path_ path) throws Exception {
        SandboxTransport t = open(path, FakeWorker.builder()
                .beforeReady(FakeWorker.garbage(300, 3))
                .beforeReady(FakeWorker.staleReady("wrong"))
                .answerHello(false));
        TransportException e = assertThrows(TransportException.class,
                () -> t.handshake(Hello.fresh(LIMITS), Duration.ofMillis(1500)));
        assertTrue(e.getMessage().contains("no READY"), e.getMessage());
        assertEquals(TransportException.Reason.HANDSHAKE_TIMEOUT, e.reason());
        assertTrue(e.getMessage().contains("300 stale bytes and 1 frames (1 READY)"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> t.request(echo(new byte[1])), "no requests before READY");
    }

    @ParameterizedTest
    @EnumSource(Path_.class)
    void echoOfOneAndSixteenMebibytes(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        for (int size : new int[] {0, 1, 1 << 20, 16 << 20}) {
            byte[] b = body(size, size);
            Frame reply = t.request(echo(b)).get(60, TimeUnit.SECONDS);
            assertEquals(FrameKind.ECHO_REPLY, reply.kind());
            assertArrayEquals(b, reply.body(), "size " + size);
        }
        assertEquals(List.of(1L, 2L, 3L, 4L), worker.received().stream().map(Frame::requestId).toList(),
                "ids allocated by the transport, from 1");
    }

    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "SERIAL_NIO", "TCP"})
    void concurrentRequestsFromSeveralThreadsAreMatchedById(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        worker.enqueue(Effect.answerAfterNext(), Effect.normal(), Effect.answerAfterNext()); // out of order too
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> jobs = new ArrayList<>();
            for (int th = 0; th < 8; th++) {
                int thread = th;
                jobs.add(pool.submit(() -> {
                    for (int i = 0; i < 40; i++) {
                        byte[] b = body(thread * 1000L + i, 1 + (thread * 7919 + i * 104729) % 70_000);
                        Frame reply = t.request(echo(b)).get(60, TimeUnit.SECONDS);
                        assertArrayEquals(b, reply.body());
                    }
                    return null;
                }));
            }
            for (Future<?> j : jobs) {
                j.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(320, worker.received().size());
        assertEquals(320, worker.received().stream().map(Frame::requestId).distinct().count(), "unique ids");
    }

    @ParameterizedTest
    @EnumSource(Path_.class)
    void peerClosingMidRequestFailsEveryPendingRequestAtOnce(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        worker.enqueue(Effect.stall(), Effect.stall(), Effect.closeConnection());
        CompletableFuture<Frame> a = t.request(echo(new byte[10]));
        CompletableFuture<Frame> b = t.request(echo(new byte[10]));
        CompletableFuture<Frame> c = t.request(echo(new byte[10]));
        for (CompletableFuture<Frame> f : List.of(a, b, c)) {
            TransportException e = assertInstanceOf(TransportException.class, failure(f));
            assertEquals(TransportException.Reason.CLOSED, e.reason());
            assertTrue(e.getMessage().contains("lost"), e.getMessage());
        }
        ExecutionException closed = assertThrows(ExecutionException.class, () -> t.closed().get(30, TimeUnit.SECONDS));
        assertInstanceOf(TransportException.class, closed.getCause());
        assertInstanceOf(TransportException.class, failure(t.request(echo(new byte[1]))), "after the loss");
    }

    /**
     * A violation is one event: both pending requests fail at that moment (the stalled one too,
     * which nothing else would end), with the same typed failure, and the transport is dropped.
     */
    @ParameterizedTest
    @EnumSource(Path_.class)
    @Tag("security")
    void oneViolationFailsEveryPendingRequestAtOnceAndEveryLaterOneBeforeWriting(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        worker.enqueue(Effect.stall(), Effect.wrongId(5));
        CompletableFuture<Frame> a = t.request(echo(new byte[] {1}));
        CompletableFuture<Frame> b = t.request(echo(new byte[] {2}));
        ExecutionException closed = assertThrows(ExecutionException.class, () -> t.closed().get(30, TimeUnit.SECONDS));
        TransportException e = assertInstanceOf(TransportException.class, closed.getCause(), "the transport is dropped");
        assertEquals(TransportException.Reason.PROTOCOL_VIOLATION, e.reason());
        assertTrue(e.getMessage().contains("a ECHO_REPLY frame for request 7, which no request waits for"
                + " (no request with that id was sent)"), e.getMessage());
        assertTrue(a.isDone() && b.isDone(), "both pending requests failed with the drop, not after it");
        assertSame(e, failure(a), "the stalled request fails with the violation too");
        assertSame(e, failure(b));

        CompletableFuture<Frame> later = t.request(echo(new byte[] {3}));
        assertTrue(later.isCompletedExceptionally(), "a later request fails at once");
        assertSame(e, failure(later));
        await().atMost(LONG).until(() -> worker.errors().isEmpty() && worker.received().size() == 2);
        Thread.sleep(200);
        assertEquals(2, worker.received().size(), "the later request was never written");
        assertEquals(0, ((FrameDispatcher) t).pendingRequests());
    }

    /** What counts as a violation after READY, each failing the request in flight with what it was. */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', quoteCharacter = '"', value = {
            "garbage        | bytes that are not frames, between frames                              |",
            "wrong-kind     | ECHO request 1 was answered with STATUS_REPLY (expected ECHO_REPLY or ERROR) | FrameCorruptException",
            "corrupt-header | a frame for request 9 the host refused                                 | FrameCorruptException",
            "oversize       | a frame for request 1 the host refused                                 | FrameTooLargeException",
            "id-zero        | a ERROR frame for request 0, which no request waits for (id 0, the handshake's) |"})
    @Tag("security")
    void whatTheWorkerMayNotSendAfterReady(String act, String said, String causeType) throws Exception {
        SandboxTransport t = openReady(Path_.SERIAL_EPOLL, FakeWorker.builder());
        worker.enqueue(switch (act) {
            case "garbage" -> Effect.rawBytesThenNormal(FakeWorker.garbage(1000, 5));
            case "wrong-kind" -> Effect.wrongKind(FrameKind.STATUS_REPLY);
            case "corrupt-header" -> Effect.rawBytesThenNormal(io.qvm.protocol.RawFrames.frame(1, 0x11, 0, 9, "nope",
                    new byte[3]));
            case "oversize" -> Effect.replyWithBody(LIMITS.maxResponseBytes() + 1);
            case "id-zero" -> Effect.rawBytesThenNormal(FakeWorker.encode(io.qvm.protocol.Messages.toFrame(
                    new io.qvm.protocol.ErrorReply(0, ErrorCode.INTERNAL, "unsolicited"))));
            default -> throw new IllegalArgumentException(act);
        });
        TransportException e = assertInstanceOf(TransportException.class, failure(t.request(echo(new byte[3]))));
        assertEquals(TransportException.Reason.PROTOCOL_VIOLATION, e.reason(), e.getMessage());
        assertTrue(e.getMessage().contains(said), e.getMessage());
        if (causeType == null) {
            assertEquals(null, e.getCause());
        } else {
            assertEquals(causeType, e.getCause().getClass().getSimpleName());
        }
        if (e.getCause() instanceof FrameTooLargeException big) {
            assertEquals(1, big.requestId());
            assertEquals(LIMITS.maxResponseBytes() + 1L, big.declaredBytes());
        }
        assertSame(e, assertThrows(ExecutionException.class, () -> t.closed().get(30, TimeUnit.SECONDS)).getCause());
    }

    /** A second answer to a request already answered: the first is delivered, the second is the violation. */
    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "TCP"})
    @Tag("security")
    void aSecondAnswerIsAViolation(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        worker.enqueue(Effect.answerTwice());
        assertArrayEquals(new byte[] {4}, t.request(echo(new byte[] {4})).get(30, TimeUnit.SECONDS).body());
        ExecutionException closed = assertThrows(ExecutionException.class, () -> t.closed().get(30, TimeUnit.SECONDS));
        TransportException e = assertInstanceOf(TransportException.class, closed.getCause());
        assertEquals(TransportException.Reason.PROTOCOL_VIOLATION, e.reason());
        assertTrue(e.getMessage().contains("request 1, which no request waits for (that request was already answered)"),
                e.getMessage());
    }

    /**
     * The late answer to a request the caller gave up on is the known race of a slow worker, not a
     * violation: it is dropped and the transport goes on.
     */
    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "TCP"})
    void theLateAnswerToAnAbandonedRequestIsDropped(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        worker.enqueue(Effect.answerAfterNext());
        CompletableFuture<Frame> slow = t.request(echo(new byte[] {1})).orTimeout(100, TimeUnit.MILLISECONDS);
        assertInstanceOf(java.util.concurrent.TimeoutException.class, failure(slow));
        assertArrayEquals(new byte[] {2}, t.request(echo(new byte[] {2})).get(30, TimeUnit.SECONDS).body(),
                "answered, then request 1's late answer follows");
        assertArrayEquals(new byte[] {3}, t.request(echo(new byte[] {3})).get(30, TimeUnit.SECONDS).body());
        assertFalse(t.closed().isDone(), "no violation");
        assertEquals(List.of(1L, 2L, 3L), worker.received().stream().map(Frame::requestId).toList());
    }

    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "TCP"})
    void errorRepliesAreAnswersAndTheTransportGoesOn(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        worker.enqueue(Effect.error(ErrorCode.LIMIT_EXCEEDED, "too many pixels"));
        WorkerErrorException e = assertInstanceOf(WorkerErrorException.class, failure(t.request(echo(new byte[3]))));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, e.code());
        assertEquals("too many pixels", e.reply().message());
        assertArrayEquals(new byte[] {7}, t.request(echo(new byte[] {7})).get(30, TimeUnit.SECONDS).body());
        assertFalse(t.closed().isDone());
    }

    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL"})
    void requestsAboveTheWorkersLimitAreRefusedBeforeWriting(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        FrameTooLargeException e = assertInstanceOf(FrameTooLargeException.class,
                failure(t.request(echo(new byte[LIMITS.maxRequestBytes() + 1]))));
        assertEquals(LIMITS.maxRequestBytes(), e.limitBytes());
        CompletableFuture<Frame> header = t.request(new Frame(FrameKind.ECHO, 0, com.fasterxml.jackson.databind.node
                .JsonNodeFactory.instance.objectNode().put("note", "x".repeat(io.qvm.protocol.FrameLimits.DEFAULT_HEADER_BYTES)),
                new byte[1]));
        assertTrue(header.isCompletedExceptionally(), "a header above the limit is refused at once, not by the encoder later");
        assertTrue(failure(header).getMessage().contains("declares a header of"), failure(header).getMessage());
        assertThrows(IllegalArgumentException.class, () -> t.request(Frame.of(FrameKind.READY, 0, new byte[0])));
        assertThrows(IllegalArgumentException.class, () -> t.request(Frame.of(FrameKind.HELLO, 0, new byte[0])));
        assertArrayEquals(new byte[] {1}, t.request(echo(new byte[] {1})).get(30, TimeUnit.SECONDS).body());
        assertEquals(1, worker.received().size(), "the refused request never reached the worker");
        assertThrows(IllegalStateException.class, () -> t.handshake(Hello.fresh(LIMITS), LONG), "one handshake");
    }

    @ParameterizedTest
    @EnumSource(Path_.class)
    void closeFailsPendingRequestsIsIdempotentAndStopsTheIoThread(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        worker.enqueue(Effect.stall());
        CompletableFuture<Frame> pending = t.request(echo(new byte[5]));
        t.close();
        t.close();
        TransportException e = assertInstanceOf(TransportException.class, failure(pending));
        assertEquals(TransportException.Reason.CLOSED, e.reason());
        assertTrue(e.getMessage().contains("closed by the host"), e.getMessage());
        t.closed().get(30, TimeUnit.SECONDS); // completes normally
        await().atMost(LONG).until(() -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(th -> th.getName().startsWith("qvm-" + t.kind()) && th.isAlive()));
        await().atMost(LONG).until(() -> worker.connectionsAccepted() == 1);
    }

    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL"})
    void goodbyeIsARequestLikeAnyOther(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, FakeWorker.builder());
        Frame bye = t.request(Frame.of(FrameKind.GOODBYE, 0, (byte[]) null)).get(30, TimeUnit.SECONDS);
        assertEquals(FrameKind.GOODBYE, bye.kind());
        assertInstanceOf(TransportException.class,
                assertThrows(ExecutionException.class, () -> t.closed().get(30, TimeUnit.SECONDS)).getCause(),
                "the worker closes after GOODBYE");
        assertSame(t.kind(), t.kind());
    }

    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "TCP"})
    @Tag("security")
    void textFromAHostileWorkerArrivesEscapedAndCapped(Path_ path) throws Exception {
        String version = "9.9\u001b]0;owned\u0007\u001b[2J\r\nINFO forged\u202E" + "v".repeat(7_000);
        SandboxTransport t = open(path, FakeWorker.builder().version(version)
                .capabilities(List.of("echo", "svg\u001b[8m\u2066hidden")));
        Ready ready = t.handshake(Hello.fresh(LIMITS), LONG);
        assertTrue(ready.version().startsWith("9.9\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x0aINFO forged<U+202E>vvv"),
                ready.version());
        assertTrue(ready.version().endsWith("… (" + version.length() + " characters in all)"), ready.version());
        assertEquals(List.of("echo", "svg\\x1b[8m<U+2066>hidden"), ready.capabilities());
        assertPrintable(ready.version());

        String message = "bad document\r\n2026-01-01 WARN forged\u001b[31m\u009b2J" + "m".repeat(60_000);
        worker.enqueue(Effect.error(ErrorCode.PARSE_ERROR, message));
        WorkerErrorException e = assertInstanceOf(WorkerErrorException.class, failure(t.request(echo(new byte[1]))));
        assertTrue(e.reply().message().startsWith("bad document\\x0d\\x0a2026-01-01 WARN forged\\x1b[31m\\x9b2J"),
                e.reply().message());
        assertTrue(e.reply().message().length() < 4096 + 40, "capped: " + e.reply().message().length());
        assertPrintable(e.getMessage());
    }

    /** Limits that let the worker declare a 64 MiB reply. */
    private static final Limits BIG_REPLIES = new Limits(32 << 20, 64 << 20, 4_000_000, 4096, 10, 30_000);

    private SandboxTransport openReady(Path_ path, Limits limits, Duration stall) throws Exception {
        switch (path) {
            case TCP -> {
                worker = FakeWorker.builder().tcp();
                transport = TcpTransport.connect(worker.tcpAddress(), limits, LONG, () -> true, NettyIo.best(), stall);
            }
            case SERIAL_NIO, SERIAL_EPOLL -> {
                worker = FakeWorker.builder().unix(dir.resolve("w.sock"));
                transport = SerialTransport.connect(worker.socketPath(), limits, LONG, () -> true,
                        path == Path_.SERIAL_NIO ? NettyIo.NIO : NettyIo.EPOLL, stall);
            }
            case VSOCK_ADOPTED_UNIX -> {
                worker = FakeWorker.builder().unix(dir.resolve("w.sock"));
                transport = AdoptedUnix.connect(worker.socketPath(), limits, stall);
            }
            default -> throw new IllegalArgumentException(path + " takes no stall timeout");
        }
        transport.handshake(Hello.fresh(limits), LONG);
        return transport;
    }

    /** A worker declares a 64 MiB reply and sends a thousand bytes: the host holds 64 KiB for it. */
    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "SERIAL_NIO", "TCP"})
    @Tag("security")
    void aHalfSentReplyHoldsWhatArrivedNotWhatItDeclared(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, BIG_REPLIES, Duration.ofMinutes(10));
        FrameDispatcher dispatcher = (FrameDispatcher) t;
        worker.enqueue(Effect.partialReply(64 << 20, 1000));
        CompletableFuture<Frame> reply = t.request(echo(new byte[1]));
        await().atMost(LONG).until(() -> dispatcher.bufferedBytes() > 0);
        assertEquals(64 * 1024, dispatcher.bufferedBytes(), "64 KiB for 1000 bytes, not the declared 64 MiB");
        assertFalse(reply.isDone(), "still waiting for the rest");
        t.close();
        assertEquals(TransportException.Reason.CLOSED, assertInstanceOf(TransportException.class, failure(reply)).reason());
    }

    /** ... and when the rest never comes, the connection is dropped with FRAME_STALLED. */
    @ParameterizedTest
    @EnumSource(value = Path_.class, names = {"SERIAL_EPOLL", "SERIAL_NIO", "TCP", "VSOCK_ADOPTED_UNIX"})
    @Tag("security")
    @Tag("fault")
    void aReplyThatStallsDropsTheConnectionWithATypedReason(Path_ path) throws Exception {
        SandboxTransport t = openReady(path, BIG_REPLIES, Duration.ofMillis(300));
        worker.enqueue(Effect.partialReply(64 << 20, 1000));
        CompletableFuture<Frame> stalled = t.request(echo(new byte[1]));
        TransportException e = assertInstanceOf(TransportException.class, failure(stalled));
        assertEquals(TransportException.Reason.FRAME_STALLED, e.reason());
        assertTrue(e.getMessage().contains("frame 1 stalled: 1000 of its 67108864 bytes"), e.getMessage());
        ExecutionException closed = assertThrows(ExecutionException.class, () -> t.closed().get(30, TimeUnit.SECONDS));
        assertSame(e, closed.getCause(), "the transport is closed with the same typed failure");
        assertSame(e, failure(t.request(echo(new byte[1]))), "and so is every later request");
        assertEquals(0, ((FrameDispatcher) t).bufferedBytes());
    }

    private static void assertPrintable(String s) {
        assertTrue(s.codePoints().noneMatch(cp -> cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)
                || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)), s);
    }
}
