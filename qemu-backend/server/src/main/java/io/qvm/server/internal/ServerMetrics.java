package io.qvm.server.internal;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.qvm.SandboxPool;
import io.qvm.micrometer.QvmPoolMetrics;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Supplier;

/**
 * What {@code GET /metrics} shows, in Prometheus' text format:
 *
 * <ul>
 * <li>{@code qvm_http_requests_seconds} (histogram; tags {@code endpoint}, {@code status},
 *     {@code code}): every request from its first byte to its answer, by how it ended;
 * <li>{@code qvm_http_render_queue} (requests admitted and waiting for a render thread),
 *     {@code qvm_http_render_in_flight} (rendering now), {@code qvm_http_connections},
 *     {@code qvm_http_buffered_bytes} (request bodies held),
 *     {@code qvm_http_draining} (1 after SIGTERM);
 * <li>the pool's meters ({@link QvmPoolMetrics}): requests by outcome, the render and acquire
 *     latency (histograms here), sandboxes by state, restores and cold boots, crashes, retries,
 *     protocol violations;
 * <li>{@code qvm_build_info} (1, tags {@code version}, {@code java}), the JVM's memory and
 *     threads, and the process's open file descriptors.
 * </ul>
 */
public final class ServerMetrics implements AutoCloseable {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final QvmPoolMetrics poolMetrics;
    private final ConcurrentMap<Tags, Timer> requestTimers = new ConcurrentHashMap<>();

    /**
     * Every gauge holds its supplier strongly: Micrometer keeps a gauge's state object by a weak
     * reference, and a method reference held by nothing else is collected (the gauge then reads NaN).
     */
    public ServerMetrics(SandboxPool pool, String version, Supplier<Number> queue, Supplier<Number> inFlight,
            Supplier<Number> connections, Supplier<Number> bufferedBytes, Supplier<Boolean> draining) {
        registry.config().meterFilter(new MeterFilter() {
            @Override
            public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                if (id.getName().equals("qvm.pool.render") || id.getName().equals("qvm.pool.acquire")
                        || id.getName().equals("qvm.http.requests")) {
                    return DistributionStatisticConfig.builder().percentilesHistogram(true)
                            .minimumExpectedValue((double) Duration.ofMillis(1).toNanos())
                            .maximumExpectedValue((double) Duration.ofMinutes(10).toNanos())
                            .build().merge(config);
                }
                return config;
            }
        });
        this.poolMetrics = new QvmPoolMetrics(pool, Tags.empty());
        poolMetrics.bindTo(registry);
        Gauge.builder("qvm.http.render.queue", queue, s -> s.get().doubleValue())
                .description("render requests admitted and waiting for a render thread").strongReference(true).register(registry);
        Gauge.builder("qvm.http.render.in.flight", inFlight, s -> s.get().doubleValue())
                .description("render requests rendering now").strongReference(true).register(registry);
        Gauge.builder("qvm.http.connections", connections, s -> s.get().doubleValue())
                .description("open HTTP connections").strongReference(true).register(registry);
        Gauge.builder("qvm.http.buffered", bufferedBytes, s -> s.get().doubleValue()).baseUnit("bytes")
                .description("bytes of request bodies reserved now (being received, queued or rendering)")
                .strongReference(true).register(registry);
        Gauge.builder("qvm.http.draining", draining, s -> s.get() ? 1 : 0)
                .description("1 once the server drains (SIGTERM): not ready, accepting nothing new").strongReference(true).register(registry);
        Gauge.builder("qvm.build.info", () -> 1)
                .tags("version", version, "java", System.getProperty("java.version", "unknown"))
                .description("the qvm version serving").strongReference(true).register(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
    }

    /** Records one answered request. */
    public void request(String endpoint, int status, String code, long startNanos) {
        Tags tags = Tags.of("endpoint", endpoint, "status", Integer.toString(status), "code", code);
        requestTimers.computeIfAbsent(tags, t -> Timer.builder("qvm.http.requests")
                .description("HTTP requests from their first byte to their answer").tags(t).register(registry))
                .record(System.nanoTime() - startNanos, java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    /** The Prometheus text exposition (format 0.0.4). */
    public String scrape() {
        return registry.scrape();
    }

    @Override
    public void close() {
        poolMetrics.close();
        registry.close();
    }
}
