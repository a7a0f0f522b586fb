package io.qvm.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.qvm.SandboxPool;
import io.qvm.SandboxPool.Outcome;
import io.qvm.SandboxPool.PoolStats;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.ToDoubleFunction;

/**
 * Micrometer metrics for one {@link SandboxPool}: bind it to a registry and the pool reports
 * what it does.
 *
 * <pre>{@code
 * SandboxPool pool = SandboxPool.builder(backend, config).build();
 * new QvmPoolMetrics(pool, Tags.of("pool", "documents")).bindTo(registry);
 * }</pre>
 *
 * <table>
 * <caption>Meters (every one also carries the tags given to the constructor)</caption>
 * <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 * <tr><td>{@code qvm.pool.requests}</td><td>counter</td><td>{@code outcome}</td><td>renders by how they
 *     ended: {@code rendered}, {@code refused}, {@code crashed}, {@code deadline_exceeded},
 *     {@code protocol_violation}, {@code pool_timeout}, {@code pool_closed}, {@code boot_failed},
 *     {@code host_setup}, {@code error} ({@link Outcome})</td></tr>
 * <tr><td>{@code qvm.pool.render}</td><td>timer</td><td>{@code outcome}</td><td>a render from the call to
 *     its return, the wait for a sandbox and any retry included</td></tr>
 * <tr><td>{@code qvm.pool.acquire}</td><td>timer</td><td>{@code result} ({@code ok}, {@code failed})</td>
 *     <td>a request's wait for its sandbox: an idle one, or the restore or boot of its own</td></tr>
 * <tr><td>{@code qvm.pool.sandboxes}</td><td>gauge</td><td>{@code state} ({@code idle},
 *     {@code reusable}, {@code busy}, {@code starting})</td><td>sandboxes alive now</td></tr>
 * <tr><td>{@code qvm.pool.starts}</td><td>function counter</td><td>{@code kind} ({@code restored},
 *     {@code cold_boot}, {@code failed})</td><td>sandboxes started: restored from a template, cold-booted,
 *     or that could not be started</td></tr>
 * <tr><td>{@code qvm.pool.crashes}</td><td>function counter</td><td></td><td>sandboxes that died under a
 *     request or broke the protocol</td></tr>
 * <tr><td>{@code qvm.pool.protocol.violations}</td><td>function counter</td><td></td><td>sandboxes stopped
 *     because their guest broke the protocol (a security event)</td></tr>
 * <tr><td>{@code qvm.pool.deadlines}</td><td>function counter</td><td></td><td>requests that overran the request
 *     deadline</td></tr>
 * <tr><td>{@code qvm.pool.retries}</td><td>function counter</td><td></td><td>renders retried in a fresh sandbox
 *     after a crash</td></tr>
 * <tr><td>{@code qvm.pool.closed}</td><td>function counter</td><td>{@code why} ({@code recycled},
 *     {@code discarded}, {@code expired})</td><td>sandboxes closed by the policy, after a failed request,
 *     or by the idle timeout or maximum lifetime</td></tr>
 * </table>
 *
 * <p>The counters and gauges read {@link SandboxPool#stats()}, so they count from the pool's
 * creation; the timers and {@code qvm.pool.requests} count from the construction of this binder,
 * which registers itself as the pool's {@link SandboxPool.Listener}. {@link #close()} unregisters
 * it. A binder may be bound to several registries.
 */
public final class QvmPoolMetrics implements MeterBinder, AutoCloseable {

    private final SandboxPool pool;
    private final Tags tags;
    private final List<Bound> bound = new CopyOnWriteArrayList<>();
    private final SandboxPool.Listener listener = new SandboxPool.Listener() {
        @Override
        public void acquired(Duration waited, boolean ok) {
            bound.forEach(b -> (ok ? b.acquiredOk() : b.acquiredFailed()).record(waited));
        }

        @Override
        public void rendered(Outcome outcome, Duration took) {
            bound.forEach(b -> {
                b.requests().get(outcome).increment();
                b.renders().get(outcome).record(took);
            });
        }
    };

    /** Metrics for {@code pool}, with no extra tags. */
    public QvmPoolMetrics(SandboxPool pool) {
        this(pool, Tags.empty());
    }

    /** Metrics for {@code pool}; every meter carries {@code tags} (e.g. the pool's name). */
    public QvmPoolMetrics(SandboxPool pool, Iterable<Tag> tags) {
        this.pool = Objects.requireNonNull(pool, "pool");
        this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
        pool.addListener(listener);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Map<Outcome, Counter> requests = new EnumMap<>(Outcome.class);
        Map<Outcome, Timer> renders = new EnumMap<>(Outcome.class);
        for (Outcome o : Outcome.values()) {
            Tags t = tags.and("outcome", tagValue(o));
            requests.put(o, Counter.builder("qvm.pool.requests").tags(t)
                    .description("renders by how they ended").register(registry));
            renders.put(o, Timer.builder("qvm.pool.render").tags(t)
                    .description("a render from the call to its return, its wait for a sandbox and any retry "
                            + "included").register(registry));
        }
        Timer acquiredOk = acquireTimer(registry, "ok");
        Timer acquiredFailed = acquireTimer(registry, "failed");

        gauge(registry, "idle", PoolStats::idle);
        gauge(registry, "reusable", PoolStats::reusable);
        gauge(registry, "busy", PoolStats::busy);
        gauge(registry, "starting", PoolStats::starting);

        counter(registry, "qvm.pool.starts", tags.and("kind", "restored"), PoolStats::restored,
                "sandboxes restored from a template");
        counter(registry, "qvm.pool.starts", tags.and("kind", "cold_boot"), PoolStats::started,
                "sandboxes that cold-booted");
        counter(registry, "qvm.pool.starts", tags.and("kind", "failed"), PoolStats::failedStarts,
                "sandboxes that could not be started");
        counter(registry, "qvm.pool.crashes", tags, PoolStats::crashed,
                "sandboxes that died under a request or broke the protocol");
        counter(registry, "qvm.pool.protocol.violations", tags, PoolStats::protocolViolations,
                "sandboxes stopped because their guest broke the protocol");
        counter(registry, "qvm.pool.deadlines", tags, PoolStats::timedOut,
                "requests that overran the request deadline");
        counter(registry, "qvm.pool.retries", tags, PoolStats::retried,
                "renders retried in a fresh sandbox after a crash");
        counter(registry, "qvm.pool.closed", tags.and("why", "recycled"), PoolStats::recycled,
                "sandboxes closed because the recycle policy said so");
        counter(registry, "qvm.pool.closed", tags.and("why", "discarded"), PoolStats::discarded,
                "sandboxes closed because their request failed");
        counter(registry, "qvm.pool.closed", tags.and("why", "expired"), PoolStats::expired,
                "sandboxes closed by the idle timeout or the maximum lifetime");

        bound.add(new Bound(requests, renders, acquiredOk, acquiredFailed));
    }

    /** Stops listening to the pool; meters already registered stay (their counts stop moving). Idempotent. */
    @Override
    public void close() {
        pool.removeListener(listener);
    }

    static String tagValue(Outcome o) {
        return o.name().toLowerCase(java.util.Locale.ROOT);
    }

    private Timer acquireTimer(MeterRegistry registry, String result) {
        return Timer.builder("qvm.pool.acquire").tags(tags.and("result", result))
                .description("a request's wait for its sandbox: an idle one, or the restore or boot of its own")
                .register(registry);
    }

    private void gauge(MeterRegistry registry, String state, ToDoubleFunction<PoolStats> value) {
        Gauge.builder("qvm.pool.sandboxes", pool, p -> value.applyAsDouble(p.stats()))
                .tags(tags.and("state", state)).description("sandboxes alive now, by state")
                .register(registry);
    }

    private void counter(MeterRegistry registry, String name, Tags t, ToDoubleFunction<PoolStats> value,
            String description) {
        FunctionCounter.builder(name, pool, p -> value.applyAsDouble(p.stats())).tags(t)
                .description(description).register(registry);
    }

    /** The meters of one registry the listener records into. */
    private record Bound(Map<Outcome, Counter> requests, Map<Outcome, Timer> renders, Timer acquiredOk,
            Timer acquiredFailed) {
    }
}
