package io.qvm;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.FakeSandboxBackend.FakeSandbox;
import io.qvm.SandboxPool.PoolStats;
import io.qvm.SandboxPool.Recycle;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.transport.testing.FakeWorker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pool against {@link FakeSandboxBackend}: every sandbox is a FakeWorker behind the real
 * serial transport, so every request, warm-up and crash travels as real frames over a real socket.
 */
@Tag("unit")
class SandboxPoolTest {

    private static final Duration LONG = Duration.ofSeconds(30);
    private static final SandboxConfig CONFIG = SandboxConfig.defaults(); // request deadline 60 s

    @TempDir
    Path tmp;

    private FakeSandboxBackend backend;
    private SandboxPool pool;
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private int docs;

    @BeforeEach
    void backend() {
        backend = new FakeSandboxBackend(tmp);
    }

    @AfterEach
    void tearDown() throws Exception {
        backend.openGate();
        if (pool != null) {
            pool.close();
        }
        backend.close();
        threads.shutdownNow();
        assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS));
        for (FakeSandbox s : backend.sandboxes()) {
            assertEquals(List.of(), s.worker().errors(), s.id());
        }
    }

    /** No sandbox ahead, no warm-up render: each test turns on what it looks at. */
    private SandboxPool.Builder builder() {
        return SandboxPool.builder(backend, CONFIG).minIdle(0).warmUpRender(false);
    }

    /** A document no other request of the test has. */
    private byte[] doc(String tag) {
        return ("<svg xmlns='http://www.w3.org/2000/svg' id='" + tag + "-" + (docs++) + "'/>")
                .getBytes(StandardCharsets.UTF_8);
    }

    private static boolean received(FakeSandbox s, byte[] document) {
        return s.requests().stream().anyMatch(f -> f.kind() == FrameKind.RENDER && Arrays.equals(f.body(), document));
    }

    /** The id of the one sandbox whose worker received {@code document}. */
    private String servedBy(byte[] document) {
        List<String> ids = backend.sandboxes().stream().filter(s -> received(s, document)).map(FakeSandbox::id)
                .toList();
        assertEquals(1, ids.size(), "exactly one sandbox received the document: " + ids);
        return ids.get(0);
    }

    private String render(String tag) {
        byte[] d = doc(tag);
        assertEquals(FakeSandboxBackend.RESULT, pool.render(RenderRequest.svg(d)));
        return servedBy(d);
    }

    private String render(String key, String tag) {
        byte[] d = doc(tag);
        assertEquals(FakeSandboxBackend.RESULT, pool.render(key, RenderRequest.svg(d)));
        return servedBy(d);
    }

    // ---- recycle policies --------------------------------------------------------------------

    @Test
    void perRequestGivesEveryRequestANeverUsedSandboxAndClosesItAfterwards() {
        pool = builder().recycle(Recycle.perRequest()).build();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.add(render("r"));
        }
        assertEquals(5, new HashSet<>(ids).size(), "five requests, five sandboxes: " + ids);
        for (FakeSandbox s : backend.sandboxes()) {
            assertEquals(1, s.requests().size(), s.id() + " served one request only: " + s.requests());
        }
        await().atMost(LONG).until(() -> backend.closes() == 5);
        assertTrue(backend.sandboxes().stream().allMatch(FakeSandbox::closed));
        PoolStats st = pool.stats();
        assertEquals(5, st.requests());
        assertEquals(st.requests(), st.recycled());
        assertEquals(5, st.started());
        assertEquals(0, st.live());
        assertEquals(0, pool.live());
    }

    @Test
    void afterRequestsServesNRequestsThenReplacesTheSandbox() {
        pool = builder().recycle(Recycle.afterRequests(3)).build();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            ids.add(render("r"));
        }
        assertEquals(List.of(ids.get(0), ids.get(0), ids.get(0), ids.get(3), ids.get(3), ids.get(3), ids.get(6)), ids);
        assertEquals(3, new HashSet<>(ids).size(), ids.toString());
        await().atMost(LONG).until(() -> backend.closes() == 2);
        assertTrue(backend.sandbox(ids.get(0)).closed());
        assertTrue(backend.sandbox(ids.get(3)).closed());
        assertFalse(backend.sandbox(ids.get(6)).closed(), "the third has served once: it stays for two more");
        PoolStats st = pool.stats();
        assertEquals(2, st.recycled());
        assertEquals(3, st.started());
        assertEquals(7, st.requests());
        assertEquals(1, st.live());
    }

    @Test
    void perCallerNeverLetsTwoKeysShareASandbox() {
        pool = builder().recycle(Recycle.perCaller()).maxSandboxes(4).build();
        Map<String, Set<String>> sandboxesOfKey = new HashMap<>();
        for (String key : List.of("a", "b", "a", "b", "a", "c", "b")) {
            sandboxesOfKey.computeIfAbsent(key, k -> new HashSet<>()).add(render(key, key));
        }
        assertEquals(Set.of("a", "b", "c"), sandboxesOfKey.keySet());
        sandboxesOfKey.values().forEach(ids -> assertEquals(1, ids.size(), "a key reuses its own sandbox: " + ids));
        Set<String> all = new HashSet<>();
        sandboxesOfKey.values().forEach(all::addAll);
        assertEquals(3, all.size(), "three keys, three sandboxes: " + sandboxesOfKey);
        for (FakeSandbox s : backend.sandboxes()) {
            Set<String> keys = new HashSet<>();
            for (Frame f : s.requests()) {
                keys.add(new String(f.body(), StandardCharsets.UTF_8).replaceAll(".*id='(\\w)-.*", "$1"));
            }
            assertEquals(1, keys.size(), s.id() + " saw documents of one caller only: " + keys);
        }
        assertEquals(3, backend.starts());
        assertEquals(0, pool.stats().recycled());
    }

    @Test
    void perCallerWithoutAKeyUsesAFreshSandboxOnce() {
        pool = builder().recycle(Recycle.perCaller()).build();
        String mine = render("k", "k");
        String anonymous = render("anon");
        assertNotEquals(mine, anonymous);
        await().atMost(LONG).until(() -> backend.sandbox(anonymous).closed());
        assertFalse(backend.sandbox(mine).closed());
        assertEquals(mine, render("k", "k"));
        assertEquals(1, pool.stats().recycled());
    }

    @Test
    void perCallerInAFullPoolClosesAnotherCallersSandboxRatherThanLendingIt() {
        pool = builder().recycle(Recycle.perCaller()).maxSandboxes(1).build();
        String a = render("a", "a");
        String b = render("b", "b");
        assertNotEquals(a, b);
        await().atMost(LONG).until(() -> backend.sandbox(a).closed());
        String a2 = render("a", "a");
        assertNotEquals(a, a2);
        assertNotEquals(b, a2, "a's new sandbox is not b's");
        await().atMost(LONG).until(() -> backend.sandbox(b).closed());
        assertEquals(2, pool.stats().recycled());
        assertEquals(1, pool.live());
    }

    @Test
    @Tag("security")
    void theDefaultGivesEveryRequestAFreshSandboxEvenWhenSandboxesColdBoot() {
        backend.restored(false); // templates off here, or every restore failed: each sandbox cold-boots
        pool = SandboxPool.builder(backend, CONFIG).minIdle(0).warmUpRender(false).build();
        assertEquals(Recycle.perRequest(), pool.recycle());
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ids.add(render("r"));
        }
        assertEquals(3, new HashSet<>(ids).size(), "three requests, three VMs, though each cold-booted: " + ids);
        await().atMost(LONG).until(() -> backend.closes() == 3);
        PoolStats st = pool.stats();
        assertEquals(3, st.started());
        assertEquals(0, st.restored());
        assertEquals(3, st.recycled());
        assertTrue(st.coldBootNotice().contains("cold-booted") && st.coldBootNotice().contains(ids.get(0)),
                "the first cold boot is named, once: " + st.coldBootNotice());
        assertTrue(st.coldBootNotice().contains("every request a fresh VM"), st.coldBootNotice());
    }

    @Test
    @Tag("security")
    void aRestoreThatFailsUnderLoadDoesNotTurnThePoolIntoOneSharedVm() {
        backend.restored(true);
        pool = SandboxPool.builder(backend, CONFIG).minIdle(0).warmUpRender(false).build();
        String first = render("r");
        assertEquals("", pool.stats().coldBootNotice(), "restored: nothing to say");
        backend.restored(false); // the backend fell back to cold boots from now on
        String second = render("r");
        String third = render("r");
        assertEquals(3, Set.of(first, second, third).size());
        PoolStats st = pool.stats();
        assertEquals(1, st.restored());
        assertEquals(2, st.started());
        assertTrue(st.coldBootNotice().contains(second), "the first cold-booted sandbox is named: " + st.coldBootNotice());
    }

    @Test
    @Tag("security")
    void aSandboxWhoseRequestFailedIsNeverReusedWhateverThePolicy() {
        for (Recycle policy : List.of(Recycle.afterRequests(100), Recycle.perCaller())) {
            SandboxPool p = builder().recycle(policy).build();
            try {
                byte[] a = doc("a");
                assertEquals(FakeSandboxBackend.RESULT, p.render("k", RenderRequest.svg(a)));
                String used = servedBy(a);
                for (ErrorCode code : List.of(ErrorCode.TIMEOUT, ErrorCode.LIMIT_EXCEEDED, ErrorCode.INTERNAL)) {
                    backend.sandbox(used).worker().enqueue(FakeWorker.Effect.error(code, "refused"));
                    RenderFailedException e = assertThrows(RenderFailedException.class,
                            () -> p.render("k", RenderRequest.svg(doc("bad"))));
                    assertEquals(code, e.code());
                    FakeSandbox failed = backend.sandbox(used);
                    await().atMost(LONG).until(failed::closed);
                    byte[] next = doc("next");
                    assertEquals(FakeSandboxBackend.RESULT, p.render("k", RenderRequest.svg(next)));
                    String nextId = servedBy(next);
                    assertNotEquals(used, nextId, policy + ": after " + code + " the next request gets another VM");
                    used = nextId;
                }
                assertEquals(3, p.stats().discarded(), policy.toString());
            } finally {
                p.close();
            }
        }
    }

    @Test
    @Tag("security")
    void afterRequestsHonoursTheCallerKeyInsteadOfIgnoringIt() {
        pool = builder().recycle(Recycle.afterRequests(10)).maxSandboxes(4).build();
        Map<String, Set<String>> sandboxesOfKey = new HashMap<>();
        for (String key : List.of("a", "b", "a", "b", "a")) {
            sandboxesOfKey.computeIfAbsent(key, k -> new HashSet<>()).add(render(key, key));
        }
        String anonymous = render("n");
        assertEquals(1, sandboxesOfKey.get("a").size(), "a reuses its own: " + sandboxesOfKey);
        assertEquals(1, sandboxesOfKey.get("b").size(), "b reuses its own: " + sandboxesOfKey);
        assertNotEquals(sandboxesOfKey.get("a"), sandboxesOfKey.get("b"));
        assertFalse(sandboxesOfKey.get("a").contains(anonymous) || sandboxesOfKey.get("b").contains(anonymous),
                "a request without a key never lands in a keyed sandbox");
        assertEquals(anonymous, render("n"), "requests without a key share among themselves under afterRequests");
    }

    @Test
    void perRequestHonoursAKeyByGivingItAFreshSandbox() {
        pool = builder().recycle(Recycle.perRequest()).build();
        String a = render("a", "a");
        String a2 = render("a", "a");
        assertNotEquals(a, a2);
        await().atMost(LONG).until(() -> backend.closes() == 2);
    }

    @Test
    void aSandboxKeptForReuseIsClosedAfterTheIdleTimeout() {
        pool = builder().recycle(Recycle.perCaller()).idleTimeout(Duration.ofMillis(300)).build();
        String a = render("a", "a");
        await().atMost(LONG).until(() -> backend.sandbox(a).closed());
        assertEquals(1, pool.stats().expired());
        assertEquals(0, pool.live());
        assertNotEquals(a, render("a", "a"), "the caller comes back to a new sandbox");
    }

    @Test
    void everySandboxIsClosedAtItsMaximumLifetimeEvenAFreshOneWaiting() {
        pool = SandboxPool.builder(backend, CONFIG).minIdle(1).warmUpRender(false).maxLifetime(Duration.ofMillis(500))
                .build();
        await().atMost(LONG).until(() -> backend.starts() >= 1);
        String first = backend.sandboxes().get(0).id();
        await().atMost(LONG).until(() -> backend.sandbox(first).closed());
        await().atMost(LONG).until(() -> backend.starts() >= 2 && pool.stats().idle() == 1);
        assertTrue(pool.stats().expired() >= 1);
    }

    @Test
    void aReusedSandboxPastItsMaximumLifetimeIsClosedWhenItsRequestEnds() {
        pool = builder().recycle(Recycle.afterRequests(100)).maxLifetime(Duration.ofMillis(200))
                .idleTimeout(Duration.ofMinutes(10)).build();
        String first = render("r");
        await().atMost(LONG).until(() -> backend.sandbox(first).closed());
        assertNotEquals(first, render("r"));
    }

    // ---- sizing --------------------------------------------------------------------------------

    @Test
    void minIdleKeepsFreshSandboxesStartedAheadAndRefillsAfterUse() {
        pool = builder().recycle(Recycle.perRequest()).minIdle(2).maxSandboxes(4).build();
        await().atMost(LONG).until(() -> pool.stats().idle() == 2);
        assertEquals(2, backend.starts());
        List<String> ahead = backend.sandboxes().stream().map(FakeSandbox::id).toList();

        String served = render("r");
        assertTrue(ahead.contains(served), "the request took a sandbox started ahead: " + served + " " + ahead);
        assertEquals(1, backend.sandbox(served).requests().size(), "and it was never used before");
        await().atMost(LONG).until(() -> pool.stats().idle() == 2 && backend.starts() == 3);
        await().atMost(LONG).until(() -> backend.sandbox(served).closed());
        PoolStats st = pool.stats();
        assertEquals(2, st.live());
        assertEquals(3, st.started());
    }

    @Test
    void aRequestWaitsAtMostTheAcquireTimeoutWhenEverySandboxIsBusy() throws Exception {
        pool = builder().recycle(Recycle.afterRequests(10)).maxSandboxes(1).acquireTimeout(Duration.ofSeconds(1))
                .build();
        backend.nextSandbox(FakeSandbox::stallNextRequest);
        CompletableFuture<byte[]> stuck = CompletableFuture.supplyAsync(() -> pool.echo(new byte[] {1, 2, 3}),
                threads);
        await().atMost(LONG).until(() -> backend.starts() == 1 && backend.sandboxes().get(0).requests().size() == 1);

        PoolTimeoutException e = assertThrows(PoolTimeoutException.class,
                () -> pool.render(RenderRequest.svg(doc("r"))));
        assertTrue(e.getMessage().contains("no sandbox of the pool became free"), e.getMessage());
        assertEquals(Duration.ofSeconds(1), e.acquireTimeout());
        assertEquals(1, e.maxSandboxes());
        assertEquals(1, backend.starts(), "maxSandboxes = 1: no second sandbox");
        assertFalse(stuck.isDone());

        backend.sandboxes().get(0).worker().close(); // the stuck VM dies
        ExecutionException died = assertThrows(ExecutionException.class, () -> stuck.get(30, TimeUnit.SECONDS));
        assertInstanceOf(SandboxLostException.class, died.getCause());
        assertEquals(FakeSandboxBackend.RESULT, pool.render(RenderRequest.svg(doc("r"))), "the slot is free again");
        assertEquals(2, backend.starts());
        assertEquals(1, pool.stats().crashed());
    }

    @Test
    void aRequestThatOverranItsDeadlineDropsItsSandbox() {
        SandboxConfig quick = CONFIG.newBuilder().requestTimeout(Duration.ofMillis(300)).build();
        pool = SandboxPool.builder(backend, quick).minIdle(0).warmUpRender(false)
                .recycle(Recycle.afterRequests(10)).build();
        backend.nextSandbox(FakeSandbox::stallNextRequest);
        assertEquals(SandboxLostException.Reason.DEADLINE_EXCEEDED, assertThrows(SandboxLostException.class, () -> pool.render(RenderRequest.svg(doc("r")))).reason());
        PoolStats st = pool.stats();
        assertEquals(1, st.timedOut());
        assertEquals(0, st.retried(), "a timeout is not retried");
        assertEquals(0, st.live());
        assertTrue(backend.sandboxes().get(0).closed());
        String next = render("r");
        assertNotEquals(backend.sandboxes().get(0).id(), next, "the stopped sandbox is not reused");
    }

    @Test
    void aFailedStartIsCountedAndTheNextRequestStartsAgain() {
        pool = builder().recycle(Recycle.perRequest()).build();
        backend.failNextStarts(1);
        assertThrows(BootFailedException.class, () -> pool.render(RenderRequest.svg(doc("r"))));
        assertEquals(1, pool.stats().failedStarts());
        assertEquals(0, pool.live(), "the failed start gave its place back");
        render("r");
        assertEquals(1, backend.starts());
    }

    @Test
    void theFillerRetriesAFailedStart() {
        backend.failNextStarts(1);
        pool = builder().recycle(Recycle.perRequest()).minIdle(1).build();
        await().atMost(LONG).until(() -> pool.stats().idle() == 1);
        assertEquals(1, pool.stats().failedStarts());
        assertEquals(1, backend.failedStarts());
        assertEquals(1, backend.starts());
    }

    // ---- crashes -----------------------------------------------------------------------------

    @Test
    void aRenderWhoseSandboxCrashedIsRetriedOnceInAFreshSandbox() {
        pool = builder().recycle(Recycle.afterRequests(10)).build();
        backend.nextSandbox(s -> s.crashOnNextRequest(null));
        byte[] d = doc("r");
        assertEquals(FakeSandboxBackend.RESULT, pool.render(RenderRequest.svg(d)));
        PoolStats st = pool.stats();
        assertEquals(1, st.retried());
        assertEquals(1, st.crashed());
        assertEquals(2, st.requests());
        assertEquals(2, backend.starts());
        FakeSandbox crashed = backend.sandboxes().get(0);
        FakeSandbox fresh = backend.sandboxes().get(1);
        assertTrue(crashed.closed());
        assertTrue(received(crashed, d) && received(fresh, d), "the same document, tried in both");
        assertEquals(1, fresh.requests().size(), "the retry got a never-used sandbox");
        assertEquals(1, pool.live());
    }

    @Test
    void aWorkerThatRanOutOfMemoryIsNotRetried() {
        pool = builder().recycle(Recycle.afterRequests(10)).build();
        backend.nextSandbox(s -> s.crashOnNextRequest(SandboxLostException.OUT_OF_MEMORY_STATUS));
        SandboxLostException e = assertThrows(SandboxLostException.class,
                () -> pool.render(RenderRequest.svg(doc("big"))));
        assertEquals(SandboxLostException.Reason.CRASHED, e.reason());
        assertTrue(e.outOfMemory());
        assertEquals(3, e.workerExitStatus().orElseThrow());
        PoolStats st = pool.stats();
        assertEquals(0, st.retried());
        assertEquals(1, st.crashed());
        assertEquals(1, backend.starts(), "no second sandbox for the same document");
        assertEquals(0, pool.live());
    }

    @Test
    @Tag("security")
    void aWorkerThatBrokeTheProtocolIsNotRetried() {
        pool = builder().recycle(Recycle.afterRequests(10)).build();
        backend.nextSandbox(FakeSandbox::breakProtocolOnNextRequest);
        SandboxLostException e = assertThrows(SandboxLostException.class,
                () -> pool.render(RenderRequest.svg(doc("hostile"))));
        assertEquals(SandboxLostException.Reason.PROTOCOL_VIOLATION, e.reason());
        PoolStats st = pool.stats();
        assertEquals(0, st.retried(), "a worker the document may have taken over gets no second one");
        assertEquals(1, st.crashed());
        assertEquals(1, backend.starts());
        assertTrue(backend.sandboxes().get(0).closed());
        assertEquals(0, pool.live());
    }

    @Test
    void aSecondCrashEndsTheRenderWithTheFirstSuppressed() {
        pool = builder().recycle(Recycle.afterRequests(10)).build();
        backend.nextSandbox(s -> s.crashOnNextRequest(null)).nextSandbox(s -> s.crashOnNextRequest(1));
        SandboxLostException e = assertThrows(SandboxLostException.class,
                () -> pool.render(RenderRequest.svg(doc("r"))));
        assertEquals(SandboxLostException.Reason.CRASHED, e.reason());
        assertEquals(1, e.workerExitStatus().orElseThrow(), "the second crash is thrown");
        assertEquals(1, e.getSuppressed().length);
        assertInstanceOf(SandboxLostException.class, e.getSuppressed()[0]);
        PoolStats st = pool.stats();
        assertEquals(1, st.retried(), "once, not again");
        assertEquals(2, st.crashed());
        assertEquals(2, backend.starts());
    }

    @Test
    void echoAndStatusTravelThroughAPooledSandbox() {
        pool = builder().recycle(Recycle.afterRequests(10)).build();
        assertArrayEquals(new byte[] {4, 5, 6}, pool.echo(new byte[] {4, 5, 6}));
        long served = pool.withSandbox(s -> s.status().requestsServed());
        assertEquals(1, served, "the worker's STATUS counts the echo before it");
        List<FrameKind> kinds = backend.sandboxes().get(0).requests().stream().map(Frame::kind).toList();
        assertEquals(List.of(FrameKind.ECHO, FrameKind.STATUS), kinds);
    }

    // ---- warm-up -------------------------------------------------------------------------------

    @Test
    void sandboxesStartedAheadAreWarmedWithRoundsOfOneSvgAndOnePdfRender() {
        pool = SandboxPool.builder(backend, CONFIG).recycle(Recycle.perRequest()).minIdle(1).build();
        await().atMost(LONG).until(() -> pool.stats().idle() == 1);
        FakeSandbox ahead = backend.sandboxes().get(0);
        List<String> types = ahead.requests().stream().map(f -> f.kind() + ":" + f.header().path("type").asText())
                .toList();
        List<String> rounds = new java.util.ArrayList<>();
        for (int i = 0; i < SandboxPool.WARM_ROUNDS; i++) {
            rounds.addAll(List.of("RENDER:svg", "RENDER:pdf"));
        }
        assertEquals(rounds, types);
        assertTrue(new String(ahead.requests().get(1).body(), 0, 5, StandardCharsets.US_ASCII).startsWith("%PDF"));

        assertEquals(ahead.id(), render("r"));
        assertEquals(2 * SandboxPool.WARM_ROUNDS + 1, ahead.requests().size(), "the warm-ups, then the request");
        assertEquals(0, pool.stats().failedStarts());
    }

    @Test
    void aSandboxStartedForARequestIsNotWarmed() {
        pool = SandboxPool.builder(backend, CONFIG).recycle(Recycle.perRequest()).minIdle(0).build();
        String id = render("r");
        assertEquals(1, backend.sandbox(id).requests().size());
    }

    @Test
    void warmUpRenderCanBeTurnedOff() {
        pool = builder().recycle(Recycle.perRequest()).minIdle(1).warmUpRender(false).build();
        await().atMost(LONG).until(() -> pool.stats().idle() == 1);
        assertEquals(List.of(), backend.sandboxes().get(0).requests());
    }

    @Test
    void warmUpStartsAndWarmsInTheCallersThread() {
        pool = SandboxPool.builder(backend, CONFIG).recycle(Recycle.perRequest()).minIdle(0).build();
        pool.warmUp();
        assertEquals(1, pool.stats().idle(), "at least one, even with minIdle 0");
        assertEquals(1, backend.starts());
        assertEquals(2 * SandboxPool.WARM_ROUNDS, backend.sandboxes().get(0).requests().size());
        pool.warmUp();
        assertEquals(1, backend.starts(), "enough are idle");
    }

    // ---- close ---------------------------------------------------------------------------------

    @Test
    void closeClosesEverySandboxAndThePoolRefusesWorkAfterwards() {
        pool = builder().recycle(Recycle.afterRequests(5)).minIdle(2).maxSandboxes(4).build();
        await().atMost(LONG).until(() -> pool.stats().idle() == 2);
        render("r"); // one used sandbox waits for reuse, the filler tops the fresh ones up again
        await().atMost(LONG).until(() -> pool.stats().idle() == 2 && pool.live() == 3);

        pool.close();
        assertEquals(0, pool.live());
        assertEquals(3, backend.starts());
        assertTrue(backend.sandboxes().stream().allMatch(FakeSandbox::closed), backend.sandboxes().toString());
        assertEquals(3, backend.closes());
        PoolClosedException late = assertThrows(PoolClosedException.class,
                () -> pool.render(RenderRequest.svg(doc("late"))));
        assertTrue(late.getMessage().contains("pool is closed"), late.getMessage());
        assertThrows(PoolClosedException.class, () -> pool.echo(new byte[1]));
        assertThrows(PoolClosedException.class, () -> pool.render("tenant", RenderRequest.svg(doc("late"))));
        pool.close(); // idempotent
        assertEquals(3, backend.starts(), "nothing started after close");
    }

    @Test
    void aRequestWaitingForASandboxWhenThePoolClosesGetsPoolClosed() throws Exception {
        pool = builder().recycle(Recycle.afterRequests(10)).maxSandboxes(1).acquireTimeout(Duration.ofMinutes(5))
                .build();
        backend.nextSandbox(FakeSandbox::stallNextRequest);
        CompletableFuture<byte[]> stuck = CompletableFuture.supplyAsync(() -> pool.echo(new byte[] {1}), threads);
        await().atMost(LONG).until(() -> backend.starts() == 1 && backend.sandboxes().get(0).requests().size() == 1);
        CompletableFuture<RenderResult> waiting = CompletableFuture.supplyAsync(
                () -> pool.render(RenderRequest.svg(doc("w"))), threads);
        await().during(Duration.ofMillis(300)).atMost(LONG).until(() -> !waiting.isDone());

        CompletableFuture.runAsync(pool::close, threads);
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(30, TimeUnit.SECONDS));
        assertInstanceOf(PoolClosedException.class, e.getCause(), "woken by close, long before its 5 min timeout");
        backend.sandboxes().get(0).worker().close(); // let the stuck request end so that close can finish
        assertThrows(ExecutionException.class, () -> stuck.get(30, TimeUnit.SECONDS));
    }

    @Test
    void aRequestThatFindsNoIdleSandboxTakesTheOneBeingStartedAheadRatherThanStartingAnother() throws Exception {
        backend.closeGate();
        pool = SandboxPool.builder(backend, CONFIG).minIdle(1).maxSandboxes(4).build();
        await().atMost(LONG).until(() -> backend.waitingAtGate() == 1); // the filler's start, under way
        Future<RenderResult> request = threads.submit(() -> pool.render(RenderRequest.svg(doc("a"))));
        Thread.sleep(500);
        assertEquals(1, backend.waitingAtGate(), "the request waits for the filler's sandbox, no start of its own");
        backend.openGate();
        assertEquals(FakeSandboxBackend.RESULT, request.get(30, TimeUnit.SECONDS));
        FakeSandbox first = backend.sandboxes().get(0);
        assertEquals(1, first.requests().size(), "the filler's sandbox served the request, and its warm-up was "
                + "skipped for it: " + first.requests());
        await().atMost(LONG).until(() -> pool.stats().idle() == 1); // the filler starts the next one, warmed
        FakeSandbox next = backend.sandboxes().get(1);
        assertEquals(2 * SandboxPool.WARM_ROUNDS, next.requests().size(), "no request waited for it: warmed in full");
    }

    @Test
    void aRequestThatWaitedItsAcquireTimeoutForASandboxStartedAheadStartsItsOwnWhereThereIsRoom() throws Exception {
        backend.closeGate();
        pool = SandboxPool.builder(backend, CONFIG).minIdle(1).maxSandboxes(4).acquireTimeout(Duration.ofMillis(300))
                .build();
        await().atMost(LONG).until(() -> backend.waitingAtGate() == 1);
        Future<RenderResult> request = threads.submit(() -> pool.render(RenderRequest.svg(doc("c"))));
        await().atMost(LONG).until(() -> backend.waitingAtGate() == 2); // its own start, not a PoolTimeoutException
        backend.openGate();
        assertEquals(FakeSandboxBackend.RESULT, request.get(30, TimeUnit.SECONDS));
    }

    @Test
    void aRequestWaitingForASandboxStartedAheadStartsItsOwnWhenThatStartFails() throws Exception {
        backend.closeGate().failNextStarts(1);
        pool = SandboxPool.builder(backend, CONFIG).minIdle(1).maxSandboxes(4).build();
        await().atMost(LONG).until(() -> backend.waitingAtGate() == 1);
        Future<RenderResult> request = threads.submit(() -> pool.render(RenderRequest.svg(doc("b"))));
        Thread.sleep(300);
        backend.openGate(); // the filler's start fails; the request starts one of its own
        assertEquals(FakeSandboxBackend.RESULT, request.get(30, TimeUnit.SECONDS));
        assertEquals(1, backend.failedStarts());
    }

    @Test
    void aSandboxWarmUpStartedBeforeCloseIsClosedToo() throws Exception {
        pool = SandboxPool.builder(backend, CONFIG).recycle(Recycle.perRequest()).minIdle(0).build();
        backend.closeGate();
        CompletableFuture<Void> warming = CompletableFuture.runAsync(pool::warmUp, threads);
        await().atMost(LONG).until(() -> backend.waitingAtGate() == 1);
        pool.close();
        backend.openGate();
        warming.get(30, TimeUnit.SECONDS);
        await().atMost(LONG).until(() -> backend.starts() == 1 && backend.closes() == 1);
        assertEquals(0, pool.live());
        assertEquals(0, pool.stats().idle());
    }

    // ---- configuration ---------------------------------------------------------------------------

    @Test
    void invalidSettingsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> Recycle.afterRequests(0));
        assertThrows(IllegalArgumentException.class, () -> Recycle.afterRequests(1_000_001));
        assertThrows(IllegalArgumentException.class, () -> builder().maxSandboxes(0));
        assertThrows(IllegalArgumentException.class, () -> builder().maxSandboxes(65));
        assertThrows(IllegalArgumentException.class, () -> builder().minIdle(-1));
        assertThrows(IllegalArgumentException.class, () -> builder().acquireTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> builder().maxSandboxes(2).minIdle(3).build());
        assertEquals(0, backend.starts());
    }
}
