package io.qvm.testing;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.HostSetupException;
import io.qvm.SandboxConfig;
import io.qvm.SandboxLostException.Reason;
import io.qvm.SandboxPool;
import io.qvm.protocol.ErrorCode;
import io.qvm.testing.RenderEndpoint.Answer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The README's example server code ({@link RenderEndpoint}) on every branch, against
 * {@link FakeSandboxBackend} under a real {@link SandboxPool}: each typed error reached the way a
 * server meets it — the renderer's own refusals and the pool's own timeout and close where they can
 * be, scripted failures for what needs a VM to go wrong. And the README shows this very code.
 */
@Tag("unit")
class ReadmeExampleTest {

    static final byte[] SVG = ("<svg xmlns='http://www.w3.org/2000/svg' width='40' height='30'>"
            + "<rect width='40' height='30' fill='#08f'/></svg>").getBytes(StandardCharsets.UTF_8);
    static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

    private final FakeSandboxBackend backend = new FakeSandboxBackend();
    private SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.defaults()).minIdle(0).build();
    private RenderEndpoint endpoint = new RenderEndpoint(pool);

    @AfterEach
    void close() {
        pool.close();
        backend.close();
    }

    @Test
    void theReadmeShowsThisVeryCode() throws IOException {
        List<String> source = Files.readAllLines(Path.of("src/test/java/io/qvm/testing/RenderEndpoint.java"));
        int begin = source.indexOf("    // README:begin");
        int end = source.indexOf("    // README:end");
        assertTrue(begin > 0 && end > begin, "markers in RenderEndpoint.java");
        String snippet = source.subList(begin + 1, end).stream()
                .map(l -> l.startsWith("    ") ? l.substring(4) : l)
                .collect(Collectors.joining("\n", "", "\n"));
        String readme = Files.readString(Path.of("../../README.md"));
        assertTrue(readme.contains(snippet), "README.md must show RenderEndpoint.render as it is:\n" + snippet);
    }

    @Test
    void aDocumentRendersToAPngOfTheAskedSize() {
        Answer a = endpoint.render(SVG);
        assertEquals(200, a.status());
        assertArrayEquals(PNG_SIGNATURE, Arrays.copyOf(a.png(), 8));
        assertEquals(1, backend.renders().size());
        assertEquals(800, backend.renders().get(0).width());
    }

    @Test
    void aDocumentTheRendererRefusesIsTheUploadersFault() {
        Answer a = endpoint.render("<svg xmlns='http://www.w3.org/2000/svg'><unclosed".getBytes(StandardCharsets.UTF_8));
        assertEquals(422, a.status());
        assertEquals("PARSE_ERROR", a.reason(), "the worker's renderer refused it, nothing scripted");
    }

    @Test
    void aScriptedRefusalKeepsItsCode() {
        backend.failNextRender(FakeSandboxBackend.renderFailed(ErrorCode.LIMIT_EXCEEDED));
        assertEquals(Answer.error(422, "LIMIT_EXCEEDED").toString(), endpoint.render(SVG).toString());
    }

    @Test
    void aCrashIsRetriedOnceByThePoolAndOnlyATwiceLostDocumentFails() {
        backend.failNextRender(FakeSandboxBackend.sandboxLost(Reason.CRASHED));
        assertEquals(200, endpoint.render(SVG).status(), "the pool retried in a fresh sandbox");
        assertEquals(2, backend.starts());

        backend.failNextRender(FakeSandboxBackend.sandboxLost(Reason.CRASHED))
                .failNextRender(FakeSandboxBackend.sandboxLost(Reason.CRASHED));
        Answer a = endpoint.render(SVG);
        assertEquals(502, a.status());
        assertEquals("CRASHED", a.reason());
    }

    @Test
    void aProtocolViolationIsTheDocumentsFaultAndASecurityEvent() {
        backend.failNextRender(FakeSandboxBackend.sandboxLost(Reason.PROTOCOL_VIOLATION));
        Answer a = endpoint.render(SVG);
        assertEquals(422, a.status());
        assertEquals("PROTOCOL_VIOLATION", a.reason());
        assertEquals(1, endpoint.securityLog.size());
        assertEquals(1, backend.starts(), "never retried");
    }

    @Test
    void aWorkerOutOfMemoryIsNotRetried() {
        backend.failNextRender(FakeSandboxBackend.outOfMemory());
        assertEquals(422, endpoint.render(SVG).status());
        assertEquals(1, backend.renders().size());
    }

    @Test
    void aDeadlineOverrunIsTheDocumentsFault() {
        backend.failNextRender(FakeSandboxBackend.sandboxLost(Reason.DEADLINE_EXCEEDED));
        Answer a = endpoint.render(SVG);
        assertEquals(422, a.status());
        assertEquals("DEADLINE_EXCEEDED", a.reason());
    }

    @Test
    void everySandboxBusyForTheAcquireTimeoutAsksToRetryLater() throws Exception {
        pool.close();
        pool = SandboxPool.builder(backend, SandboxConfig.defaults()).minIdle(0).maxSandboxes(1)
                .acquireTimeout(Duration.ofMillis(200)).build();
        endpoint = new RenderEndpoint(pool);
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Void> holder = CompletableFuture.runAsync(() -> pool.withSandbox(s -> {
            busy.countDown();
            try {
                return release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }));
        assertTrue(busy.await(30, TimeUnit.SECONDS));

        Answer a = endpoint.render(SVG);
        assertEquals(503, a.status());
        assertEquals("busy", a.reason());
        assertEquals(5, a.retryAfterSeconds());
        release.countDown();
        holder.get(30, TimeUnit.SECONDS);
        assertEquals(200, endpoint.render(SVG).status(), "free again");
    }

    @Test
    void aClosedPoolSendsRequestsElsewhere() {
        pool.close();
        Answer a = endpoint.render(SVG);
        assertEquals(503, a.status());
        assertEquals("shutting down", a.reason());
    }

    @Test
    void aSandboxThatNeverBootsAsksToRetryLater() {
        backend.failNextStart(FakeSandboxBackend.bootFailed());
        Answer a = endpoint.render(SVG);
        assertEquals(503, a.status());
        assertEquals(30, a.retryAfterSeconds());
        assertEquals(200, endpoint.render(SVG).status(), "the next start works");
    }

    @Test
    void anUnfitHostRaisesAnAlert() {
        backend.failNextStart(FakeSandboxBackend.hostSetup(HostSetupException.Problem.QEMU_NOT_FOUND));
        Answer a = endpoint.render(SVG);
        assertEquals(500, a.status());
        assertEquals("QEMU_NOT_FOUND", a.reason());
        assertEquals(1, endpoint.alerts.size());
    }

    @Test
    void scriptedPoolErrorsReachTheirBranchesToo() {
        backend.failNextRender(FakeSandboxBackend.poolTimeout()).failNextRender(FakeSandboxBackend.poolClosed());
        assertEquals("busy", endpoint.render(SVG).reason());
        assertEquals("shutting down", endpoint.render(SVG).reason());
        await().atMost(Duration.ofSeconds(30)).until(() -> backend.liveSandboxes() == 0);
    }
}
