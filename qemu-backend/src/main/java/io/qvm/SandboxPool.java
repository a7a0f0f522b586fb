package io.qvm;

import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * Sandboxes of one {@link SandboxConfig} for a server that renders many documents, handed out
 * under a {@link Recycle recycle policy}:
 *
 * <ul>
 *   <li>{@link Recycle#perRequest()} — a fresh, never-used sandbox for every request, closed
 *       afterwards: a document that exploits the renderer never sees a later document. The
 *       default ({@link Recycle#auto()}) whenever the backend restores sandboxes from a template
 *       (a clone costs a fraction of a second there, a cold boot a minute);</li>
 *   <li>{@link Recycle#afterRequests(int)} — a sandbox serves up to N requests, then is closed;</li>
 *   <li>{@link Recycle#perCaller()} — {@link #render(String, RenderRequest)}: a sandbox serves one
 *       caller key only; one caller's documents never share a VM with another's.</li>
 * </ul>
 *
 * <p>A background thread keeps {@link Builder#minIdle} fresh sandboxes started ahead (each
 * warmed by {@link #warmUp canned renders}, so a request does not pay a clone's first renders'
 * translation cost), so a request never waits for a restore; at most
 * {@link Builder#maxSandboxes} exist at once; a request waits at most
 * {@link Builder#acquireTimeout} for one. A sandbox that died or overran its deadline is dropped.
 * A render whose sandbox crashed is retried once in a fresh sandbox — except when the worker ran
 * out of memory on that document (exit status 3), which it would do again, and when the worker
 * broke the protocol ({@link SandboxLostException.Reason#PROTOCOL_VIOLATION}: a worker the
 * document may have taken over gets no second one).
 *
 * <pre>{@code
 * try (QemuVmBackend backend = QemuVmBackend.create();
 *      SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.defaults()).minIdle(2).build()) {
 *     RenderResult png = pool.render(RenderRequest.svg(bytes));
 *     RenderResult mine = pool.render("tenant-42", RenderRequest.pdf(pdfBytes));  // perCaller()
 *     PoolStats s = pool.stats();
 * }
 * }</pre>
 */
public final class SandboxPool implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(SandboxPool.class.getName());

    /** How long a sandbox may be used. */
    public sealed interface Recycle permits PerRequest, AfterRequests, PerCaller, Auto {
        /** A fresh sandbox per request. */
        static Recycle perRequest() {
            return new PerRequest();
        }

        /** A sandbox serves up to {@code n} requests (1..1,000,000), then is replaced. */
        static Recycle afterRequests(int n) {
            return new AfterRequests(n);
        }

        /** A sandbox serves one caller key ({@link SandboxPool#render(String, RenderRequest)}) only. */
        static Recycle perCaller() {
            return new PerCaller();
        }

        /**
         * {@link #perRequest()} when the backend restores sandboxes from a template, otherwise
         * {@code afterRequests(1000)}: decided by the first sandbox the pool gets.
         */
        static Recycle auto() {
            return new Auto();
        }
    }

    record PerRequest() implements Recycle {
    }

    record AfterRequests(int n) implements Recycle {
        AfterRequests {
            if (n < 1 || n > 1_000_000) {
                throw new IllegalArgumentException("afterRequests(" + n + ") is invalid: allowed 1..1000000");
            }
        }
    }

    record PerCaller() implements Recycle {
    }

    record Auto() implements Recycle {
    }

    /** What {@code auto()} uses when sandboxes cold-boot. */
    static final int AUTO_REUSE = 1000;

    /**
     * Counters since the pool was created.
     *
     * @param started    sandboxes that cold-booted
     * @param restored   sandboxes restored from a template
     * @param recycled   sandboxes closed because the policy said so (not because they failed)
     * @param crashed    sandboxes that died under a request (or broke the protocol and were stopped)
     * @param timedOut   requests that overran the request deadline (their sandbox was stopped)
     * @param requests   requests handed a sandbox
     * @param retried    renders retried in a fresh sandbox after a crash
     * @param failedStarts sandboxes that could not be started
     * @param live       sandboxes alive now (idle, busy or starting)
     * @param idle       fresh sandboxes waiting now
     */
    public record PoolStats(long started, long restored, long recycled, long crashed, long timedOut, long requests,
            long retried, long failedStarts, int live, int idle) {
    }

    private final SandboxBackend backend;
    private final SandboxConfig config;
    private final int maxSandboxes;
    private final int minIdle;
    private final Duration acquireTimeout;
    private final boolean warmUpRender;
    private volatile Recycle recycle;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** Never used (beyond the warm-up render). */
    private final Deque<Sandbox> fresh = new ArrayDeque<>();
    /** Used, may serve again (afterRequests). */
    private final Deque<Sandbox> used = new ArrayDeque<>();
    /** Used by one caller, may serve that caller again (perCaller). */
    private final Map<String, Sandbox> byCaller = new HashMap<>();
    private final Map<Sandbox, Integer> uses = new IdentityHashMap<>();
    private int live;
    private int starting;
    private boolean closed;
    private final Thread filler;

    private final AtomicLong started = new AtomicLong();
    private final AtomicLong restored = new AtomicLong();
    private final AtomicLong recycled = new AtomicLong();
    private final AtomicLong crashed = new AtomicLong();
    private final AtomicLong timedOut = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong retried = new AtomicLong();
    private final AtomicLong failedStarts = new AtomicLong();

    private SandboxPool(Builder b) {
        this.backend = b.backend;
        this.config = b.config;
        this.maxSandboxes = b.maxSandboxes;
        this.minIdle = b.minIdle;
        this.acquireTimeout = b.acquireTimeout != null ? b.acquireTimeout
                : config.bootTimeout().plus(config.requestTimeout());
        this.warmUpRender = b.warmUpRender;
        this.recycle = b.recycle;
        if (minIdle > maxSandboxes) {
            throw new IllegalArgumentException("minIdle = " + minIdle + " is more than maxSandboxes = " + maxSandboxes);
        }
        this.filler = new Thread(this::fillLoop, "qvm-pool-filler");
        this.filler.setDaemon(true);
        if (minIdle > 0) {
            filler.start();
        }
    }

    /** A pool of {@code config} sandboxes; see {@link Builder} for the defaults. The pool does not close {@code backend}. */
    public static Builder builder(SandboxBackend backend, SandboxConfig config) {
        return new Builder(backend, config);
    }

    /**
     * At most {@code size} sandboxes of {@code config}, recycled by {@link Recycle#auto()}, none
     * started ahead (the shape of qvm's first pool).
     */
    public static SandboxPool of(SandboxBackend backend, SandboxConfig config, int size) {
        return builder(backend, config).maxSandboxes(size).minIdle(0).build();
    }

    /** The policy in force ({@code auto()} is resolved by the first sandbox). */
    public Recycle recycle() {
        return recycle;
    }

    /** Starts sandboxes until {@code minIdle} (at least one) are idle, in the caller's thread. */
    public void warmUp() {
        int want = Math.max(1, minIdle);
        while (true) {
            lock.lock();
            try {
                if (closed || fresh.size() + starting >= want || live >= maxSandboxes) {
                    return;
                }
                live++;
                starting++;
            } finally {
                lock.unlock();
            }
            Sandbox s = startReserved(warmUpRender);
            lock.lock();
            try {
                if (closed) {
                    dropLocked(s); // the pool was closed while this one started: nobody would ever close it
                    changed.signalAll();
                    return;
                }
                fresh.addLast(s);
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Renders in a sandbox the policy allows; see {@link Sandbox#render} for the exceptions. A
     * render whose sandbox died under it is tried once more in a fresh sandbox, unless the worker
     * ran out of memory on this document.
     */
    public RenderResult render(RenderRequest request) {
        return renderRetrying(null, request);
    }

    /**
     * Renders for caller {@code key} under {@link Recycle#perCaller()}: the sandbox has served
     * this key only, and will serve this key only. Under another policy the key is ignored.
     */
    public RenderResult render(String key, RenderRequest request) {
        Objects.requireNonNull(key, "key");
        return renderRetrying(key, request);
    }

    private RenderResult renderRetrying(String key, RenderRequest request) {
        try {
            return run(key, s -> s.render(request));
        } catch (SandboxLostException first) {
            if (first.outOfMemory() || first.reason() != SandboxLostException.Reason.CRASHED) {
                throw first; // the same document would exhaust, overrun or take over the next worker too
            }
            retried.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "a sandbox died during a render; retrying once in a fresh "
                    + "sandbox: " + first.getMessage().lines().findFirst().orElse(""));
            try {
                return run(key, s -> s.render(request));
            } catch (SandboxLostException second) {
                second.addSuppressed(first);
                throw second;
            }
        }
    }

    /** Echoes through a pooled sandbox; see {@link Sandbox#echo}. */
    public byte[] echo(byte[] payload) {
        return run(null, s -> s.echo(payload));
    }

    /** Runs {@code work} on a sandbox the policy allows and gives it back (or closes it). */
    public <T> T withSandbox(Function<Sandbox, T> work) {
        return run(null, work);
    }

    private <T> T run(String key, Function<Sandbox, T> work) {
        Sandbox s = acquire(key);
        boolean ok = false;
        try {
            T result = work.apply(s);
            ok = true;
            return result;
        } catch (SandboxLostException e) {
            (e.reason() == SandboxLostException.Reason.DEADLINE_EXCEEDED ? timedOut : crashed).incrementAndGet();
            throw e;
        } finally {
            release(s, key, ok);
        }
    }

    private Sandbox acquire(String key) {
        Sandbox s = acquireUncounted(key);
        requests.incrementAndGet();
        return s;
    }

    private Sandbox acquireUncounted(String key) {
        long deadline = System.nanoTime() + acquireTimeout.toNanos();
        boolean startHere = false;
        lock.lock();
        try {
            while (true) {
                if (closed) {
                    throw new IllegalStateException("the pool is closed");
                }
                Sandbox s = takeIdle(key);
                if (s != null) {
                    changed.signalAll(); // the filler may top up
                    return s;
                }
                if (live < maxSandboxes) {
                    live++;
                    starting++;
                    startHere = true;
                    break;
                }
                if (!evictOneIdle()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new SandboxException("no sandbox of the pool became free within "
                                + acquireTimeout.toMillis() + " ms (all " + maxSandboxes + " busy); raise "
                                + "maxSandboxes or acquireTimeout, or lower the request deadline");
                    }
                    try {
                        changed.awaitNanos(left);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new SandboxException("interrupted while waiting for a free sandbox", e);
                    }
                }
            }
        } finally {
            lock.unlock();
        }
        // started for this request: it pays the first render itself, a warm-up would only add to it
        return startHere ? startReserved(false) : null;
    }

    /** Under the lock: a live sandbox this request may use, or null. Dead ones are dropped. */
    private Sandbox takeIdle(String key) {
        Recycle r = recycle;
        if (r instanceof PerCaller && key != null) {
            Sandbox mine = byCaller.remove(key);
            if (mine != null) {
                if (mine.isAlive()) {
                    return mine;
                }
                dropLocked(mine);
            }
        }
        if (r instanceof AfterRequests || r instanceof Auto) {
            Sandbox s;
            while ((s = used.pollFirst()) != null) {
                if (s.isAlive()) {
                    return s;
                }
                dropLocked(s);
            }
        }
        Sandbox s;
        while ((s = fresh.pollFirst()) != null) {
            if (s.isAlive()) {
                return s;
            }
            dropLocked(s);
        }
        return null;
    }

    /** Under the lock, when full: closes one sandbox that only waits to be reused, to make room. */
    private boolean evictOneIdle() {
        Sandbox victim = used.pollLast();
        if (victim == null && !byCaller.isEmpty()) {
            String k = byCaller.keySet().iterator().next();
            victim = byCaller.remove(k);
        }
        if (victim == null) {
            return false;
        }
        recycled.incrementAndGet();
        dropLocked(victim);
        return true;
    }

    private void release(Sandbox s, String key, boolean ok) {
        lock.lock();
        try {
            int n = uses.merge(s, 1, Integer::sum);
            Recycle r = recycle;
            if (closed || !s.isAlive()) {
                dropLocked(s);
            } else if (r instanceof PerRequest || (r instanceof PerCaller && key == null)) {
                recycled.incrementAndGet();
                dropLocked(s);
            } else if (r instanceof AfterRequests a && n >= a.n() || r instanceof Auto && n >= AUTO_REUSE) {
                recycled.incrementAndGet();
                dropLocked(s);
            } else if (r instanceof PerCaller) {
                Sandbox previous = byCaller.put(key, s);
                if (previous != null && previous != s) {
                    recycled.incrementAndGet();
                    dropLocked(previous);
                }
            } else {
                used.addFirst(s);
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: forget {@code s} and close it outside the lock's critical work. */
    private void dropLocked(Sandbox s) {
        uses.remove(s);
        live--;
        closeLater(s);
    }

    private void closeLater(Sandbox s) {
        // Closing waits for QEMU to exit (up to seconds): never under the lock, never in the caller's path.
        Thread t = new Thread(() -> {
            try {
                s.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "closing " + s.id() + ": " + e);
            }
        }, "qvm-pool-close-" + s.id());
        t.setDaemon(false);
        t.start();
        closing.add(t);
    }

    /** This pool's closer threads, which {@link #close()} waits for. */
    private final java.util.Set<Thread> closing = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Starts a sandbox for a place reserved under the lock ({@code live++, starting++}). */
    private Sandbox startReserved(boolean warm) {
        Sandbox s = null;
        try {
            s = backend.start(config);
            if (s.bootReport().restored()) {
                restored.incrementAndGet();
            } else {
                started.incrementAndGet();
            }
            resolveAuto(s);
            if (warm) {
                warmUp(s);
            }
            return s;
        } catch (RuntimeException e) {
            failedStarts.incrementAndGet();
            if (s != null) {
                s.close();
            }
            lock.lock();
            try {
                live--;
            } finally {
                lock.unlock();
            }
            throw e;
        } finally {
            lock.lock();
            try {
                starting--;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    private void resolveAuto(Sandbox s) {
        if (recycle instanceof Auto) {
            Recycle chosen = s.bootReport().restored() ? Recycle.perRequest() : Recycle.afterRequests(AUTO_REUSE);
            lock.lock(); // the pool's one lock, which release() reads the policy under
            try {
                if (recycle instanceof Auto) {
                    recycle = chosen;
                    LOG.log(System.Logger.Level.INFO, "pool recycle policy: " + chosen + " (sandboxes "
                            + (s.bootReport().restored() ? "are restored from a template" : "cold-boot") + ")");
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * The canned renders a pool gives each sandbox it starts ahead: {@value #WARM_ROUNDS} rounds
     * of one SVG and one PDF, qvm's own documents, never a caller's. A clone's QEMU starts with an
     * empty TCG translation cache, so its first renders are slow; measured here (TCG, samples/
     * hello.svg in a fresh clone, one render every 0.2 s) 1.3–1.8 s, then 0.3–0.6 s, settling at
     * the warm sandbox's 0.2–0.3 s from about the fourth render on. Off the request path, that
     * is time the pool spends in the background instead of a caller waiting.
     */
    public static void warmUp(Sandbox s) {
        for (int i = 0; i < WARM_ROUNDS; i++) {
            s.render(RenderRequest.svg(WARM_SVG));
            s.render(RenderRequest.pdf(WARM_PDF));
        }
    }

    static final int WARM_ROUNDS = 3;

    private static final byte[] WARM_SVG = resource("warmup/hello.svg");
    private static final byte[] WARM_PDF = resource("warmup/hello.pdf");

    private static byte[] resource(String name) {
        try (InputStream in = SandboxPool.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing resource io/qvm/" + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Keeps {@code minIdle} fresh sandboxes ready; backs off after a failed start. */
    private void fillLoop() {
        long backoffMillis = 500;
        while (true) {
            lock.lock();
            try {
                while (!closed && (fresh.size() + starting >= minIdle || live >= maxSandboxes)) {
                    changed.await();
                }
                if (closed) {
                    return;
                }
                live++;
                starting++;
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            try {
                Sandbox s = startReserved(warmUpRender);
                lock.lock();
                try {
                    if (closed) {
                        dropLocked(s);
                    } else {
                        fresh.addLast(s);
                    }
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
                backoffMillis = 500;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "the pool could not start a sandbox ahead (retrying in "
                        + backoffMillis + " ms): " + e.getMessage().lines().findFirst().orElse(""));
                try {
                    Thread.sleep(backoffMillis);
                } catch (InterruptedException ie) {
                    return;
                }
                backoffMillis = Math.min(backoffMillis * 2, 30_000);
            }
        }
    }

    public PoolStats stats() {
        lock.lock();
        try {
            return new PoolStats(started.get(), restored.get(), recycled.get(), crashed.get(), timedOut.get(),
                    requests.get(), retried.get(), failedStarts.get(), live, fresh.size());
        } finally {
            lock.unlock();
        }
    }

    /** Sandboxes alive in the pool now (idle, busy or starting). */
    public int live() {
        lock.lock();
        try {
            return live;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Closes every idle sandbox now and every busy one when its request ends; waits (up to a
     * minute) until they are all stopped. Idempotent.
     */
    @Override
    public void close() {
        List<Sandbox> toClose = new ArrayList<>();
        lock.lock();
        try {
            if (!closed) {
                closed = true;
                toClose.addAll(fresh);
                toClose.addAll(used);
                toClose.addAll(byCaller.values());
                fresh.clear();
                used.clear();
                byCaller.clear();
                toClose.forEach(this::dropLocked);
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        filler.interrupt();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        try {
            filler.join(TimeUnit.NANOSECONDS.toMillis(Math.max(1, deadline - System.nanoTime())) + 1);
            for (Thread t : List.copyOf(closing)) {
                long left = deadline - System.nanoTime();
                if (left > 0) {
                    t.join(TimeUnit.NANOSECONDS.toMillis(left) + 1);
                }
                if (!t.isAlive()) {
                    closing.remove(t);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Builder for {@link SandboxPool}; every default lives here. */
    public static final class Builder {
        private final SandboxBackend backend;
        private final SandboxConfig config;
        private Recycle recycle = Recycle.auto();
        private int maxSandboxes = 4;
        private int minIdle = 1;
        private Duration acquireTimeout;
        private boolean warmUpRender = true;

        private Builder(SandboxBackend backend, SandboxConfig config) {
            this.backend = Objects.requireNonNull(backend, "backend");
            this.config = Objects.requireNonNull(config, "config");
        }

        /** Default {@link Recycle#auto()}. */
        public Builder recycle(Recycle policy) {
            this.recycle = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Most sandboxes alive at once, busy or idle (1..64, default 4). */
        public Builder maxSandboxes(int n) {
            if (n < 1 || n > 64) {
                throw new IllegalArgumentException("maxSandboxes = " + n + " is invalid: allowed 1..64");
            }
            this.maxSandboxes = n;
            return this;
        }

        /** Fresh sandboxes kept started ahead, in the background (0..64, default 1). */
        public Builder minIdle(int n) {
            if (n < 0 || n > 64) {
                throw new IllegalArgumentException("minIdle = " + n + " is invalid: allowed 0..64");
            }
            this.minIdle = n;
            return this;
        }

        /** Longest wait for a sandbox (default: the boot deadline plus the request deadline). */
        public Builder acquireTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("acquireTimeout must be positive, got " + timeout);
            }
            this.acquireTimeout = timeout;
            return this;
        }

        /** Whether each sandbox started ahead is warmed by {@link SandboxPool#warmUp} first (default true). */
        public Builder warmUpRender(boolean warm) {
            this.warmUpRender = warm;
            return this;
        }

        public SandboxPool build() {
            return new SandboxPool(this);
        }
    }

    @Override
    public String toString() {
        return "SandboxPool[" + recycle + ", max " + maxSandboxes + ", minIdle " + minIdle + ", " + stats() + "]";
    }
}
