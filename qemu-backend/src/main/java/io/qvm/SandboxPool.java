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
 *   <li>{@link Recycle#perRequest()} (the default) — a fresh, never-used sandbox for every
 *       request, closed afterwards: a document that exploits the renderer never sees a later
 *       document. Where the backend restores sandboxes from a template a clone costs a fraction
 *       of a second; where it cannot (templates off, a restore that failed), every request pays a
 *       cold boot — the pool says so once at WARNING and in {@link PoolStats#coldBootNotice()},
 *       and still never lets two requests share a VM;</li>
 *   <li>{@link Recycle#afterRequests(int)} — chosen explicitly: a sandbox serves up to N requests
 *       <em>of one caller key</em> (requests without a key form one group of their own), then is
 *       closed;</li>
 *   <li>{@link Recycle#perCaller()} — {@link #render(String, RenderRequest)}: a sandbox serves one
 *       caller key only; one caller's documents never share a VM with another's. A request
 *       without a key gets a fresh sandbox, used once.</li>
 * </ul>
 *
 * <p>Whatever the policy, a sandbox whose request failed — the document was refused
 * ({@link RenderFailedException}), overran its deadline, or the sandbox died — is closed, never
 * handed to the next request; and a caller key is never ignored. Sandboxes kept for reuse are
 * closed after {@link Builder#idleTimeout} without a request, and every sandbox (fresh ones
 * waiting too) after {@link Builder#maxLifetime}.
 *
 * <p>A background thread keeps {@link Builder#minIdle} fresh sandboxes started ahead (each
 * warmed by {@link #warmUp canned renders}, so a request does not pay a clone's first renders'
 * translation cost), so a request never waits for a restore — and a request that finds none idle
 * takes the one being started ahead, whose warm-up then stops, rather than start another beside
 * it (on a small host both would slow each other down); at most
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
 *     RenderResult mine = pool.render(authenticatedTenant, RenderRequest.pdf(pdfBytes));
 *     PoolStats s = pool.stats();
 * }
 * }</pre>
 */
public final class SandboxPool implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(SandboxPool.class.getName());

    /** How long a sandbox may be used. */
    public sealed interface Recycle permits PerRequest, AfterRequests, PerCaller {
        /** A fresh sandbox per request (the default). */
        static Recycle perRequest() {
            return new PerRequest();
        }

        /**
         * A sandbox serves up to {@code n} requests (1..1,000,000) of one caller key, then is
         * replaced; requests without a key share sandboxes among themselves only.
         */
        static Recycle afterRequests(int n) {
            return new AfterRequests(n);
        }

        /** A sandbox serves one caller key ({@link SandboxPool#render(String, RenderRequest)}) only. */
        static Recycle perCaller() {
            return new PerCaller();
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
     * @param discarded  sandboxes closed because their request failed (never reused)
     * @param expired    sandboxes closed by the idle timeout or the maximum lifetime
     * @param coldBootNotice empty while every sandbox was restored from a template; else why
     *                   sandboxes cold-boot (each request then pays a cold boot under
     *                   {@code perRequest()})
     * @param starting   sandboxes being started now (booting or restoring)
     * @param reusable   used sandboxes waiting now to serve their caller key again
     * @param protocolViolations sandboxes stopped because their guest broke the protocol (also in {@code crashed})
     */
    public record PoolStats(long started, long restored, long recycled, long crashed, long timedOut, long requests,
            long retried, long failedStarts, int live, int idle, long discarded, long expired, String coldBootNotice,
            int starting, int reusable, long protocolViolations) {

        /** Sandboxes serving a request now. */
        public int busy() {
            return Math.max(0, live - idle - starting - reusable);
        }
    }

    /** How a {@link #render} ended, as a {@link Listener} hears it. */
    public enum Outcome {
        /** A PNG came back. */
        RENDERED,
        /** {@link RenderFailedException}: the worker refused or failed the document. */
        REFUSED,
        /** {@link SandboxLostException} {@code CRASHED} (after the pool's one retry, where it made one). */
        CRASHED,
        /** {@link SandboxLostException} {@code DEADLINE_EXCEEDED}. */
        DEADLINE_EXCEEDED,
        /** {@link SandboxLostException} {@code PROTOCOL_VIOLATION}. */
        PROTOCOL_VIOLATION,
        /** {@link PoolTimeoutException}: no sandbox came free in time. */
        POOL_TIMEOUT,
        /** {@link PoolClosedException}. */
        POOL_CLOSED,
        /** {@link BootFailedException}: the sandbox started for the request never became ready. */
        BOOT_FAILED,
        /** {@link HostSetupException}: this host cannot run sandboxes as configured. */
        HOST_SETUP,
        /** Anything else (another {@link SandboxException}, an interrupt). */
        ERROR;

        static Outcome of(RuntimeException e) {
            if (e instanceof RenderFailedException) {
                return REFUSED;
            }
            if (e instanceof SandboxLostException lost) {
                return switch (lost.reason()) {
                    case CRASHED -> CRASHED;
                    case DEADLINE_EXCEEDED -> DEADLINE_EXCEEDED;
                    case PROTOCOL_VIOLATION -> PROTOCOL_VIOLATION;
                };
            }
            if (e instanceof PoolTimeoutException) {
                return POOL_TIMEOUT;
            }
            if (e instanceof PoolClosedException) {
                return POOL_CLOSED;
            }
            if (e instanceof BootFailedException) {
                return BOOT_FAILED;
            }
            return e instanceof HostSetupException ? HOST_SETUP : ERROR;
        }
    }

    /**
     * Hears what a pool does, as it does it: the hook for metrics ({@code qvm-micrometer}'s
     * {@code QvmPoolMetrics} is one), registered with {@link #addListener}. Called on the
     * request's thread once the fact is known; keep it fast. What a listener throws is logged and
     * dropped, never passed to the request.
     */
    public interface Listener {
        /**
         * A request waited {@code waited} for its sandbox — for an idle one, or for the start of
         * its own — and got one ({@code ok}) or gave up (timeout, closed pool, failed start).
         */
        default void acquired(Duration waited, boolean ok) {
        }

        /** A {@link #render} ended with {@code outcome} after {@code took}, its acquire and any retry included. */
        default void rendered(Outcome outcome, Duration took) {
        }
    }

    /** One live sandbox's bookkeeping. */
    private static final class Lease {
        final long bornNanos = System.nanoTime();
        int uses;
        /** The caller key it served (null: requests without a key). */
        String key;
        long idleSinceNanos;
    }

    private final SandboxBackend backend;
    private final SandboxConfig config;
    private final int maxSandboxes;
    private final int minIdle;
    private final Duration acquireTimeout;
    private final Duration idleTimeout;
    private final Duration maxLifetime;
    private final boolean warmUpRender;
    private final Recycle recycle;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** Never used (beyond the warm-up render). */
    private final Deque<Sandbox> fresh = new ArrayDeque<>();
    /** Used, may serve the same caller key again (afterRequests, perCaller); the null key is allowed. */
    private final Map<String, Deque<Sandbox>> reusable = new HashMap<>();
    private final Map<Sandbox, Lease> leases = new IdentityHashMap<>();
    private int live;
    private int starting;
    /** Starts of sandboxes ahead (the filler's, {@link #warmUp()}'s) now under way. */
    private int startingAhead;
    /** Requests waiting for one of those instead of starting a sandbox of their own. */
    private int claims;
    private boolean closed;
    private String coldBootNotice = "";
    private final Thread filler;
    private final Thread keeper;

    private final AtomicLong started = new AtomicLong();
    private final AtomicLong restored = new AtomicLong();
    private final AtomicLong recycled = new AtomicLong();
    private final AtomicLong crashed = new AtomicLong();
    private final AtomicLong protocolViolations = new AtomicLong();
    private final List<Listener> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final AtomicLong timedOut = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong retried = new AtomicLong();
    private final AtomicLong failedStarts = new AtomicLong();
    /** Why the last start that failed did (null: none failed). */
    private volatile RuntimeException lastStartFailure;
    private final AtomicLong discarded = new AtomicLong();
    private final AtomicLong expired = new AtomicLong();

    private SandboxPool(Builder b) {
        this.backend = b.backend;
        this.config = b.config;
        this.maxSandboxes = b.maxSandboxes;
        this.minIdle = b.minIdle;
        this.acquireTimeout = b.acquireTimeout != null ? b.acquireTimeout
                : config.bootTimeout().plus(config.requestTimeout());
        this.idleTimeout = b.idleTimeout;
        this.maxLifetime = b.maxLifetime;
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
        this.keeper = new Thread(this::expiryLoop, "qvm-pool-expiry");
        this.keeper.setDaemon(true);
        keeper.start();
    }

    /** A pool of {@code config} sandboxes; see {@link Builder} for the defaults. The pool does not close {@code backend}. */
    public static Builder builder(SandboxBackend backend, SandboxConfig config) {
        return new Builder(backend, config);
    }

    /**
     * At most {@code size} sandboxes of {@code config}, a fresh one per request, none started
     * ahead (the shape of qvm's first pool).
     */
    public static SandboxPool of(SandboxBackend backend, SandboxConfig config, int size) {
        return builder(backend, config).maxSandboxes(size).minIdle(0).build();
    }

    /** The policy in force. */
    public Recycle recycle() {
        return recycle;
    }

    /** The config every sandbox of this pool is started with. */
    public SandboxConfig config() {
        return config;
    }

    /** Most sandboxes alive at once ({@link Builder#maxSandboxes}). */
    public int maxSandboxes() {
        return maxSandboxes;
    }

    /** Fresh sandboxes kept started ahead ({@link Builder#minIdle}). */
    public int minIdle() {
        return minIdle;
    }

    /** Longest wait of a request for a sandbox ({@link Builder#acquireTimeout}). */
    public Duration acquireTimeout() {
        return acquireTimeout;
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
                startingAhead++;
            } finally {
                lock.unlock();
            }
            Sandbox s = startAhead();
            lock.lock();
            try {
                startingAhead--;
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
     * {@link #warmUp()}, then waits until {@code minIdle} (at least one) fresh sandboxes are idle —
     * whether this thread, the background filler or both started them — so the host was checked,
     * the template is there and a sandbox is warm. What a service's readiness waits for.
     *
     * @return whether they are idle within {@code timeout} (false also when the pool closed)
     * @throws RuntimeException the failure of a start that failed meanwhile (a {@link SandboxException}
     *     such as {@link BootFailedException} or {@link HostSetupException}), once no other start is
     *     under way
     */
    public boolean awaitWarm(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        long failuresBefore = failedStarts.get();
        warmUp();
        int want = Math.max(1, minIdle);
        long end = System.nanoTime() + timeout.toNanos();
        lock.lock();
        try {
            while (!closed && fresh.size() < want) {
                if (failedStarts.get() != failuresBefore && starting == 0 && lastStartFailure != null) {
                    throw lastStartFailure;
                }
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                changed.awaitNanos(left);
            }
            return !closed;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            lock.unlock();
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
     * Renders for caller {@code key}: the sandbox has served this key only, and will serve this
     * key only, under every policy ({@code perRequest()}: it is fresh and closed afterwards;
     * {@code afterRequests(n)} and {@code perCaller()}: it is reused for this key alone).
     *
     * <p>The key must be an <strong>authenticated principal</strong> (the tenant your server
     * authenticated), never a value the uploader chooses: a tenant who could name another
     * tenant's key would be handed the sandbox that rendered the other tenant's documents.
     */
    public RenderResult render(String key, RenderRequest request) {
        Objects.requireNonNull(key, "key");
        return renderRetrying(key, request);
    }

    private RenderResult renderRetrying(String key, RenderRequest request) {
        long t0 = System.nanoTime();
        try {
            RenderResult r = renderRetryingUnheard(key, request);
            tell(l -> l.rendered(Outcome.RENDERED, Duration.ofNanos(System.nanoTime() - t0)));
            return r;
        } catch (RuntimeException e) {
            tell(l -> l.rendered(Outcome.of(e), Duration.ofNanos(System.nanoTime() - t0)));
            throw e;
        }
    }

    private RenderResult renderRetryingUnheard(String key, RenderRequest request) {
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
            if (e.reason() == SandboxLostException.Reason.PROTOCOL_VIOLATION) {
                protocolViolations.incrementAndGet();
            }
            throw e;
        } finally {
            // ok stays false for every failure, a refused document included: that sandbox is never reused
            release(s, key, ok);
        }
    }

    private Sandbox acquire(String key) {
        long t0 = System.nanoTime();
        Sandbox s;
        try {
            s = acquireUncounted(key);
        } catch (RuntimeException e) {
            tell(l -> l.acquired(Duration.ofNanos(System.nanoTime() - t0), false));
            throw e;
        }
        requests.incrementAndGet();
        tell(l -> l.acquired(Duration.ofNanos(System.nanoTime() - t0), true));
        return s;
    }

    /** Registers a listener (e.g. metrics); it hears what happens from now on. */
    public void addListener(Listener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    /** Removes a listener added with {@link #addListener}; no-op if it is not registered. */
    public void removeListener(Listener listener) {
        listeners.remove(listener);
    }

    private void tell(java.util.function.Consumer<Listener> event) {
        for (Listener l : listeners) {
            try {
                event.accept(l);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "a pool listener failed; its event is dropped", e);
            }
        }
    }

    private Sandbox acquireUncounted(String key) {
        long deadline = System.nanoTime() + acquireTimeout.toNanos();
        boolean startHere = false;
        boolean claimed = false;
        boolean waitedEnough = false;
        lock.lock();
        try {
            while (true) {
                boolean wasClaimed = claimed;
                if (claimed) {
                    claims--;
                    claimed = false;
                }
                if (closed) {
                    throw new PoolClosedException();
                }
                // fresh sandboxes go to the requests that waited for them first
                Sandbox s = takeIdle(key, wasClaimed || fresh.size() > claims);
                if (s != null) {
                    changed.signalAll(); // the filler may top up
                    return s;
                }
                if (!waitedEnough && claims < startingAhead) {
                    // A sandbox is being started ahead (restored, or warmed): wait for it — it stops
                    // warming for this request — rather than start one more beside it, which on a
                    // small host takes the cores both need (a restore and a first render each).
                    long left = deadline - System.nanoTime();
                    if (left > 0) {
                        claims++;
                        claimed = true;
                        try {
                            changed.awaitNanos(left);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new SandboxException("interrupted while waiting for a free sandbox", e);
                        }
                        continue;
                    }
                    waitedEnough = true; // past its acquire timeout: one of its own where there is room
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
                        throw new PoolTimeoutException(acquireTimeout, maxSandboxes);
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
            if (claimed) {
                claims--;
            }
            lock.unlock();
        }
        // started for this request: it pays the first render itself, a warm-up would only add to it
        return startHere ? startReserved(false) : null;
    }

    /**
     * Under the lock: a live sandbox this request may use, or null; a fresh one only if
     * {@code freshToo}. Dead ones are dropped.
     */
    private Sandbox takeIdle(String key, boolean freshToo) {
        if (reuses(key)) {
            Deque<Sandbox> mine = reusable.get(key);
            Sandbox s;
            while (mine != null && (s = mine.pollFirst()) != null) {
                if (mine.isEmpty()) {
                    reusable.remove(key);
                }
                if (usable(s, true)) {
                    return s;
                }
            }
        }
        Sandbox s;
        while (freshToo && (s = fresh.pollFirst()) != null) {
            if (usable(s, false)) {
                return s;
            }
        }
        return null;
    }

    /**
     * Under the lock, for an idle sandbox just taken from its queue: true if it may serve; else
     * it is closed (dead, or past its idle timeout or lifetime though the expiry thread has not
     * come round to it yet).
     */
    private boolean usable(Sandbox s, boolean reused) {
        if (!s.isAlive()) {
            dropLocked(s);
            return false;
        }
        Lease l = leases.get(s);
        long now = System.nanoTime();
        if (now - l.bornNanos >= maxLifetime.toNanos()) {
            expire(s, "its maximum lifetime of " + maxLifetime);
            return false;
        }
        if (reused && now - l.idleSinceNanos >= idleTimeout.toNanos()) {
            expire(s, "no request for " + idleTimeout);
            return false;
        }
        return true;
    }

    /** Whether a sandbox that served {@code key} may serve it again under the policy. */
    private boolean reuses(String key) {
        return recycle instanceof AfterRequests || recycle instanceof PerCaller && key != null;
    }

    /** Under the lock, when full: closes the sandbox that has waited longest to be reused, to make room. */
    private boolean evictOneIdle() {
        Sandbox victim = null;
        String victimKey = null;
        for (Map.Entry<String, Deque<Sandbox>> e : reusable.entrySet()) {
            Sandbox oldest = e.getValue().peekLast();
            if (victim == null || leases.get(oldest).idleSinceNanos - leases.get(victim).idleSinceNanos < 0) {
                victim = oldest;
                victimKey = e.getKey();
            }
        }
        if (victim == null) {
            return false;
        }
        Deque<Sandbox> q = reusable.get(victimKey);
        q.pollLast();
        if (q.isEmpty()) {
            reusable.remove(victimKey);
        }
        recycled.incrementAndGet();
        dropLocked(victim);
        return true;
    }

    private void release(Sandbox s, String key, boolean ok) {
        lock.lock();
        try {
            Lease lease = leases.get(s);
            int n = ++lease.uses;
            lease.key = key;
            if (closed || !s.isAlive()) {
                dropLocked(s);
            } else if (!ok) {
                discarded.incrementAndGet(); // its request failed: what the document did there stays there
                dropLocked(s);
            } else if (!reuses(key) || recycle instanceof AfterRequests a && n >= a.n()) {
                recycled.incrementAndGet();
                dropLocked(s);
            } else if (System.nanoTime() - lease.bornNanos >= maxLifetime.toNanos()) {
                expired.incrementAndGet();
                dropLocked(s);
            } else {
                lease.idleSinceNanos = System.nanoTime();
                reusable.computeIfAbsent(key, k -> new ArrayDeque<>()).addFirst(s);
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Closes idle sandboxes past their time: one kept for reuse after {@link Builder#idleTimeout}
     * without a request, any idle one (fresh ones too) after {@link Builder#maxLifetime}. Busy
     * ones are looked at when their request ends ({@link #release}).
     */
    private void expiryLoop() {
        lock.lock();
        try {
            while (!closed) {
                long now = System.nanoTime();
                long next = Long.MAX_VALUE;
                for (java.util.Iterator<Sandbox> it = fresh.iterator(); it.hasNext(); ) {
                    Sandbox s = it.next();
                    long due = leases.get(s).bornNanos + maxLifetime.toNanos();
                    if (due - now <= 0) {
                        it.remove();
                        expire(s, "its maximum lifetime of " + maxLifetime);
                    } else {
                        next = Math.min(next, due - now);
                    }
                }
                for (java.util.Iterator<Deque<Sandbox>> qs = reusable.values().iterator(); qs.hasNext(); ) {
                    Deque<Sandbox> q = qs.next();
                    for (java.util.Iterator<Sandbox> it = q.iterator(); it.hasNext(); ) {
                        Sandbox s = it.next();
                        Lease l = leases.get(s);
                        long idleDue = l.idleSinceNanos + idleTimeout.toNanos();
                        long lifeDue = l.bornNanos + maxLifetime.toNanos();
                        if (idleDue - now <= 0 || lifeDue - now <= 0) {
                            it.remove();
                            expire(s, idleDue - now <= 0 ? "no request for " + idleTimeout
                                    : "its maximum lifetime of " + maxLifetime);
                        } else {
                            next = Math.min(next, Math.min(idleDue, lifeDue) - now);
                        }
                    }
                    if (q.isEmpty()) {
                        qs.remove();
                    }
                }
                try {
                    changed.awaitNanos(next);
                } catch (InterruptedException e) {
                    return;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Under the lock: closes an idle sandbox whose time is up. */
    private void expire(Sandbox s, String why) {
        expired.incrementAndGet();
        LOG.log(System.Logger.Level.DEBUG, "closing pooled sandbox " + s.id() + ": " + why);
        dropLocked(s);
        changed.signalAll(); // the filler may start a fresh one in its place
    }

    /** Under the lock: forget {@code s} and close it outside the lock's critical work. */
    private void dropLocked(Sandbox s) {
        leases.remove(s);
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
            } finally {
                closing.remove(Thread.currentThread()); // a long-lived pool keeps no finished closer (nor its sandbox)
            }
        }, "qvm-pool-close-" + s.id());
        t.setDaemon(false);
        closing.add(t);
        t.start();
    }

    /** This pool's closer threads, which {@link #close()} waits for. */
    private final java.util.Set<Thread> closing = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * Starts a sandbox ahead for a place reserved under the lock ({@code live++, starting++,
     * startingAhead++}), warmed unless a request is waiting for it. The caller hands it over
     * ({@code fresh}) and counts {@code startingAhead} down in one step under the lock, so a
     * request waiting for it never sees neither.
     */
    private Sandbox startAhead() {
        try {
            return startReserved(warmUpRender);
        } catch (RuntimeException | Error e) {
            lock.lock();
            try {
                startingAhead--;
                changed.signalAll(); // a request that waited for it starts its own
            } finally {
                lock.unlock();
            }
            throw e;
        }
    }

    /** Whether a request waits for a sandbox being started ahead (its warm-up then stops). */
    private boolean claimed() {
        lock.lock();
        try {
            return claims > 0;
        } finally {
            lock.unlock();
        }
    }

    /** Starts a sandbox for a place reserved under the lock ({@code live++, starting++}). */
    private Sandbox startReserved(boolean warm) {
        Sandbox s = null;
        try {
            s = backend.start(config);
            if (s.bootReport().restored()) {
                restored.incrementAndGet();
            } else {
                started.incrementAndGet();
                noticeColdBoot(s);
            }
            lock.lock();
            try {
                leases.put(s, new Lease());
            } finally {
                lock.unlock();
            }
            if (warm) {
                warm(s);
            }
            return s;
        } catch (RuntimeException | Error e) { // an Error too: the place reserved for it is given back
            if (e instanceof RuntimeException re) {
                lastStartFailure = re;
            }
            failedStarts.incrementAndGet();
            lock.lock();
            try {
                if (s != null) {
                    leases.remove(s);
                }
                live--;
            } finally {
                lock.unlock();
            }
            if (s != null) {
                try {
                    s.close();
                } catch (RuntimeException closing) {
                    e.addSuppressed(closing);
                }
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

    /**
     * Said once per pool, at WARNING and in {@link PoolStats#coldBootNotice()}: sandboxes are
     * cold-booted, not restored (templates off or unusable here, or a restore failed). The
     * policy does not change: under {@code perRequest()} every request still gets a fresh VM,
     * and pays a cold boot for it.
     */
    private void noticeColdBoot(Sandbox s) {
        String why = s.bootReport().notes().isEmpty() ? "templates are off or cannot serve this config here"
                : String.join("; ", s.bootReport().notes());
        String notice = "sandbox " + s.id() + " was cold-booted, not restored from a template (" + why + "); the pool"
                + " still gives " + (recycle instanceof PerRequest ? "every request a fresh VM, each paying a cold boot"
                : "sandboxes out under " + recycle) + ". To reuse sandboxes instead, choose Recycle.afterRequests(n)"
                + " or perCaller() explicitly; to restore clones, see `qvm doctor` and `qvm template build`";
        boolean first;
        lock.lock();
        try {
            first = coldBootNotice.isEmpty();
            if (first) {
                coldBootNotice = notice;
            }
        } finally {
            lock.unlock();
        }
        if (first) {
            LOG.log(System.Logger.Level.WARNING, notice);
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

    /** {@link #warmUp(Sandbox)}, stopped early when a request waits for this sandbox. */
    private void warm(Sandbox s) {
        for (int i = 0; i < WARM_ROUNDS && !claimed(); i++) {
            s.render(RenderRequest.svg(WARM_SVG));
            if (!claimed()) {
                s.render(RenderRequest.pdf(WARM_PDF));
            }
        }
    }

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
                startingAhead++;
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            try {
                Sandbox s = startAhead();
                lock.lock();
                try {
                    startingAhead--;
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
                    requests.get(), retried.get(), failedStarts.get(), live, fresh.size(), discarded.get(),
                    expired.get(), coldBootNotice, starting, reusable.values().stream().mapToInt(Deque::size).sum(),
                    protocolViolations.get());
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
                reusable.values().forEach(toClose::addAll);
                fresh.clear();
                reusable.clear();
                toClose.forEach(this::dropLocked);
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        filler.interrupt();
        keeper.interrupt();
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
        private Recycle recycle = Recycle.perRequest();
        private Duration idleTimeout = Duration.ofMinutes(10);
        private Duration maxLifetime = Duration.ofMinutes(30);
        private int maxSandboxes = 4;
        private int minIdle = 1;
        private Duration acquireTimeout;
        private boolean warmUpRender = true;

        private Builder(SandboxBackend backend, SandboxConfig config) {
            this.backend = Objects.requireNonNull(backend, "backend");
            this.config = Objects.requireNonNull(config, "config");
        }

        /**
         * Default {@link Recycle#perRequest()}: no two requests share a VM. Reuse
         * ({@code afterRequests}, {@code perCaller}) is the caller's explicit choice.
         */
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

        /**
         * A sandbox kept for reuse ({@code afterRequests}, {@code perCaller}) is closed after this
         * long without a request (default 10 minutes, as connection pools do): an idle VM holds
         * memory and its worker's state, and a caller that left does not come back for it.
         */
        public Builder idleTimeout(Duration timeout) {
            this.idleTimeout = positive("idleTimeout", timeout);
            return this;
        }

        /**
         * Any sandbox — waiting fresh, or kept for reuse — is closed once it is this old and idle
         * (default 30 minutes); a busy one when its request ends. Bounds how long one VM, and
         * whatever a document left in it, lives.
         */
        public Builder maxLifetime(Duration lifetime) {
            this.maxLifetime = positive("maxLifetime", lifetime);
            return this;
        }

        private static Duration positive(String name, Duration d) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, got " + d);
            }
            return d;
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
