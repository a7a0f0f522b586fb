package io.qvm.cli;

import io.qvm.protocol.Messages;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.RenderFailedException;
import io.qvm.SandboxLostException;
import io.qvm.cli.control.ControlClient;
import io.qvm.cli.control.ControlServer;
import io.qvm.cli.control.ControlTarget;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The control socket's relay on a real AF_UNIX socket: every answer, every typed failure, deadlines. */
@Tag("unit")
class ControlRelayTest {

    static final Duration DEADLINE = Duration.ofSeconds(30);

    Path dir;
    FakeTargets.Scripted target;
    ControlServer server;

    @BeforeEach
    void start() throws IOException {
        dir = Files.createTempDirectory(Path.of("/tmp"), "qvmctl");
        target = new FakeTargets.Scripted();
        server = ControlServer.start(dir.resolve("ctl.sock"), target, FrameLimits.ofBody(4096), l -> { });
    }

    @AfterEach
    void stop() {
        server.close();
        FileTrees.deleteQuietly(dir);
    }

    ControlClient client() throws IOException {
        return ControlClient.connect(server.socket(), 1 << 20, 1 << 20);
    }

    @Test
    void echoRenderAndHello() throws IOException {
        try (ControlClient c = client()) {
            assertArrayEquals(new byte[] {1, 2, 3}, c.echo(new byte[] {1, 2, 3}, DEADLINE));
            RenderResult r = c.render(RenderRequest.svg("<svg/>".getBytes()).withSize(5, 4), DEADLINE);
            assertEquals(5, r.width());
            assertEquals(4, r.height());
            Frame ready = c.call(Messages.toFrame(Hello.fresh(new Limits(1024, 1024, 100, 10, 1, 1000))), DEADLINE);
            assertEquals(ControlServer.VERSION, Messages.ready(ready).version());
        }
        assertEquals(2, server.requestsServed());
    }

    @Test
    void typedFailuresCrossTheSocket() throws IOException {
        target.then(q -> {
            throw new RenderFailedException(ErrorCode.UNSUPPORTED, "external resources are refused");
        }).then(q -> {
            throw new SandboxLostException(SandboxLostException.Reason.DEADLINE_EXCEEDED, "overran");
        }).then(q -> {
            throw new SandboxLostException(SandboxLostException.Reason.CRASHED, "the worker ran out of memory");
        }).then(q -> {
            throw new IllegalStateException("boom");
        });
        RenderRequest req = RenderRequest.svg("<svg/>".getBytes());
        try (ControlClient c = client()) {
            RenderFailedException u = assertThrows(RenderFailedException.class, () -> c.render(req, DEADLINE));
            assertEquals(ErrorCode.UNSUPPORTED, u.code());
            assertEquals(ErrorCode.UNSUPPORTED, u.code());
            assertTrue(u.getMessage().endsWith("external resources are refused"), u.getMessage());
            assertEquals(SandboxLostException.Reason.DEADLINE_EXCEEDED, assertThrows(SandboxLostException.class, () -> c.render(req, DEADLINE)).reason());
            assertEquals(SandboxLostException.Reason.CRASHED, assertThrows(SandboxLostException.class, () -> c.render(req, DEADLINE)).reason());
            io.qvm.SandboxException other = assertThrows(io.qvm.SandboxException.class, () -> c.render(req, DEADLINE));
            assertTrue(other.getMessage().contains("boom"));
            // the connection is still usable after every failure
            assertArrayEquals(new byte[] {9}, c.echo(new byte[] {9}, DEADLINE));
        }
    }

    @Test
    void aRequestAboveTheServersLimitIsSkippedAndAnsweredTooLarge() throws IOException {
        try (ControlClient c = client()) {
            RenderFailedException e = assertThrows(RenderFailedException.class,
                    () -> c.echo(new byte[5000], DEADLINE));
            assertEquals(ErrorCode.TOO_LARGE, e.code());
            assertEquals(ErrorCode.TOO_LARGE, e.code());
            assertArrayEquals(new byte[] {7}, c.echo(new byte[] {7}, DEADLINE));
        }
        try (ControlClient small = ControlClient.connect(server.socket(), 10, 1 << 20)) {
            RenderFailedException e = assertThrows(RenderFailedException.class, () -> small.echo(new byte[11], DEADLINE));
            assertEquals(ErrorCode.TOO_LARGE, e.code());
        }
    }

    @Test
    void aBadRenderHeaderIsBadRequestNotACrash() throws IOException {
        try (ControlClient c = client()) {
            var h = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
            h.put("type", "gif");
            RenderFailedException e = assertThrows(RenderFailedException.class,
                    () -> c.call(new Frame(FrameKind.RENDER, 0, h, new byte[1]), DEADLINE));
            assertEquals(ErrorCode.BAD_REQUEST, e.code());
            e = assertThrows(RenderFailedException.class, () -> c.call(Frame.of(FrameKind.READY, 0, new byte[0]), DEADLINE));
            assertEquals(ErrorCode.BAD_REQUEST, e.code());
        }
    }

    @Test
    void aStalledTargetHitsTheClientDeadline() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        target.then(q -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return new RenderResult(FakeTargets.png(1, 1), 1, 1, 0);
        });
        try (ControlClient c = client()) {
            CliException e = assertThrows(CliException.class,
                    () -> c.render(RenderRequest.svg("<svg/>".getBytes()), Duration.ofMillis(300)));
            assertEquals(ExitCode.TIMEOUT, e.exitCode());
            assertEquals("TIMEOUT", e.code());
        } finally {
            release.countDown();
        }
    }

    @Test
    void goodbyeStopsTheTargetOnceAndAnswersAfterwards() throws Exception {
        try (ControlClient c = client()) {
            c.goodbye(DEADLINE);
        }
        assertEquals(1, target.stops.get());
        assertTrue(server.goodbyeReceived().isDone());
        server.stopRequested().get(30, java.util.concurrent.TimeUnit.SECONDS); // completes right after the reply
    }

    @Test
    void anEndingServerLetsTheRenderInProgressFinishThenRefusesEveryRequestSayingWhy() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        target.then(q -> {
            inside.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return new RenderResult(FakeTargets.png(3, 2), 3, 2, 0);
        });
        try (ControlClient busy = client(); ControlClient later = client()) {
            java.util.concurrent.CompletableFuture<RenderResult> inFlight = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> {
                        try {
                            return busy.render(RenderRequest.svg("<svg/>".getBytes()), DEADLINE);
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
            inside.await();
            assertEquals(Duration.ZERO, server.idleFor(), "a render in progress is not idleness");
            assertTrue(!server.endIfIdle(Duration.ofMillis(1), "idle"), "busy: the idle timeout does not end it");
            java.util.concurrent.CompletableFuture<Boolean> drained = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return server.endAccepting("qvm up session x has ended (max lifetime)", DEADLINE);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            // endAccepting runs on another thread: the later request goes only once it took effect.
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> !server.accepting());
            io.qvm.SandboxException refused = assertThrows(io.qvm.SandboxException.class,
                    () -> later.render(RenderRequest.svg("<svg/>".getBytes()), DEADLINE));
            assertTrue(refused.getMessage().contains("has ended (max lifetime)"), refused.getMessage());
            release.countDown();
            assertEquals(3, inFlight.get(30, java.util.concurrent.TimeUnit.SECONDS).width(), "answered, not cut short");
            assertTrue(drained.get(30, java.util.concurrent.TimeUnit.SECONDS));
            assertThrows(io.qvm.SandboxException.class, () -> later.echo(new byte[] {1}, DEADLINE));
        } finally {
            release.countDown();
        }
    }

    @Test
    void whichSandboxServedARenderCrossesTheSocket() throws IOException {
        server.close();
        ControlTarget named = new ControlTarget() {
            @Override
            public byte[] echo(byte[] payload) {
                return payload;
            }

            @Override
            public ControlTarget.Rendered render(RenderRequest request) {
                return new ControlTarget.Rendered(new RenderResult(FakeTargets.png(2, 2), 2, 2, 1),
                        new ControlTarget.ServedBy("clone0000001", ControlTarget.FRESH_PER_RENDER, 0, true));
            }

            @Override
            public void stop() {
            }
        };
        server = ControlServer.start(dir.resolve("ctl.sock"), named, FrameLimits.ofBody(4096), l -> { });
        try (ControlClient c = client()) {
            ControlTarget.Rendered r = c.renderServed(RenderRequest.svg("<svg/>".getBytes()), DEADLINE);
            assertEquals(new ControlTarget.ServedBy("clone0000001", ControlTarget.FRESH_PER_RENDER, 0, true),
                    r.servedBy());
            assertTrue(r.servedBy().fresh());
        }
    }

    @Test
    void nobodyListeningIsAnIoError() {
        server.close();
        assertThrows(IOException.class, this::client);
    }
}
