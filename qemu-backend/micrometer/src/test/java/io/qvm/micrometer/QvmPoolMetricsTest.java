package io.qvm.micrometer;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.qvm.BootFailedException;
import io.qvm.PoolClosedException;
import io.qvm.RenderFailedException;
import io.qvm.SandboxConfig;
import io.qvm.SandboxLostException;
import io.qvm.SandboxLostException.Reason;
import io.qvm.SandboxPool;
import io.qvm.protocol.RenderRequest;
import io.qvm.testing.FakeSandboxBackend;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The binder on a real {@link SandboxPool} over {@link FakeSandboxBackend}: each meter moves when its event happens. */
@Tag("unit")
class QvmPoolMetricsTest {

    static final byte[] SVG = "<svg xmlns='http://www.w3.org/2000/svg' width='20' height='10'/>"
            .getBytes(StandardCharsets.UTF_8);

    private final FakeSandboxBackend backend = new FakeSandboxBackend();
    private final SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.defaults()).minIdle(0).build();
    private final MeterRegistry registry = new SimpleMeterRegistry();
    private final QvmPoolMetrics metrics = new QvmPoolMetrics(pool, Tags.of("pool", "docs"));

    @AfterEach
    void close() {
        metrics.close();
        pool.close();
        backend.close();
    }

    @Test
    void everyOutcomeIsCountedAndTimedUnderItsTag() {
        metrics.bindTo(registry);
        pool.render(RenderRequest.svg(SVG));
        pool.render(RenderRequest.svg(SVG));
        assertThrows(RenderFailedException.class, () -> pool.render(RenderRequest.svg("<svg".getBytes())));
        backend.failNextRender(FakeSandboxBackend.sandboxLost(Reason.PROTOCOL_VIOLATION));
        assertThrows(SandboxLostException.class, () -> pool.render(RenderRequest.svg(SVG)));
        backend.failNextRender(FakeSandboxBackend.sandboxLost(Reason.CRASHED)); // retried once: rendered
        pool.render(RenderRequest.svg(SVG));
        backend.failNextStart(FakeSandboxBackend.bootFailed());
        assertThrows(BootFailedException.class, () -> pool.render(RenderRequest.svg(SVG)));

        assertEquals(3, requests("rendered"));
        assertEquals(1, requests("refused"));
        assertEquals(1, requests("protocol_violation"));
        assertEquals(1, requests("boot_failed"));
        assertEquals(0, requests("crashed"));
        assertEquals(3, registry.get("qvm.pool.render").tags("pool", "docs", "outcome", "rendered").timer().count());
        assertEquals(6, registry.get("qvm.pool.acquire").tags("result", "ok").timer().count(),
                "five renders got a sandbox, the crashed one's retry another; the sixth render's start failed");
        assertEquals(1, registry.get("qvm.pool.acquire").tags("result", "failed").timer().count());

        assertEquals(1, count("qvm.pool.protocol.violations"));
        assertEquals(2, count("qvm.pool.crashes"), "the violation and the retried crash");
        assertEquals(1, count("qvm.pool.retries"));
        assertEquals(6, registry.get("qvm.pool.starts").tags("kind", "restored").functionCounter().count());
        assertEquals(1, registry.get("qvm.pool.starts").tags("kind", "failed").functionCounter().count());
        assertEquals(0, registry.get("qvm.pool.starts").tags("kind", "cold_boot").functionCounter().count());
    }

    @Test
    void theSandboxGaugesFollowThePool() throws Exception {
        metrics.bindTo(registry);
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Boolean> holder = CompletableFuture.supplyAsync(() -> pool.withSandbox(s -> {
            busy.countDown();
            try {
                return release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }));
        assertTrue(busy.await(30, TimeUnit.SECONDS));
        assertEquals(1.0, sandboxes("busy"));
        release.countDown();
        assertTrue(holder.get(30, TimeUnit.SECONDS));
        await().atMost(Duration.ofSeconds(30)).until(() -> sandboxes("busy") == 0.0);

        pool.warmUp(); // one fresh sandbox, waiting
        assertEquals(1.0, sandboxes("idle"));
        assertEquals(0.0, sandboxes("starting"));
    }

    @Test
    void aClosedPoolAndEveryRegistryBoundAreCounted() {
        MeterRegistry second = new SimpleMeterRegistry();
        metrics.bindTo(registry);
        metrics.bindTo(second);
        pool.close();
        assertThrows(PoolClosedException.class, () -> pool.render(RenderRequest.svg(SVG)));
        assertEquals(1, requests("pool_closed"));
        assertEquals(1, second.get("qvm.pool.requests").tags("outcome", "pool_closed").counter().count());
    }

    @Test
    void afterCloseTheBinderHearsNothing() {
        metrics.bindTo(registry);
        metrics.close();
        pool.render(RenderRequest.svg(SVG));
        assertEquals(0, requests("rendered"));
        assertEquals(1, registry.get("qvm.pool.starts").tags("kind", "restored").functionCounter().count(),
                "what reads the pool's stats still moves");
    }

    private double requests(String outcome) {
        return registry.get("qvm.pool.requests").tags("pool", "docs", "outcome", outcome).counter().count();
    }

    private double count(String name) {
        return registry.get(name).tags("pool", "docs").functionCounter().count();
    }

    private double sandboxes(String state) {
        return registry.get("qvm.pool.sandboxes").tags("state", state).gauge().value();
    }
}
