package io.qvm.reliability;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import io.qvm.SandboxPool;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import io.qvm.server.QvmServer;
import io.qvm.server.Tenants;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The {@code serve} category of the reliability run: {@code qvm serve}'s {@link QvmServer} on a
 * loopback port over a fresh-clone-per-document pool, driven over real HTTP by several clients at
 * once for two tenants, one request in {@code hostileEvery} hostile: a document refused, one that
 * times out (the turbulence SVG also makes the worker exit), or a request with another's token
 * forged. Held: the PNG for an ordinary document, the status and code the case expects for a
 * hostile one (a 429 or 503 is retried once after its {@code Retry-After}, as a client should).
 */
final class ServeLoad {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** What one run of the category measured. */
    record Result(int tried, int held, int lost, Map<String, Integer> outcomes, List<String> notes) {
    }

    private ServeLoad() {
    }

    static Result run(QemuVmBackend backend, SandboxConfig config, int requests, int clients, int hostileEvery,
            Consumer<String> say) throws IOException {
        String alpha = "alpha-" + Long.toHexString(System.nanoTime());
        String beta = "beta-" + Long.toHexString(System.nanoTime() + 1);
        Tenants tenants = Tenants.parse(List.of("alpha:" + Tenants.sha256Hex(alpha), "beta:" + Tenants.sha256Hex(beta)),
                "serve load");
        List<RenderRequest> ordinary = List.of(RenderRequest.svg(Reliability.resource("warmup/hello.svg")),
                RenderRequest.pdf(Reliability.resource("warmup/hello.pdf")));
        // the forged token first, then the refused documents, then those that time out: a short run
        // (the suite's slice) meets the HTTP-level and the refused cases; a long one meets them all
        List<HostileDocuments.Case> hostile = new ArrayList<>(HostileDocuments.all());
        hostile.addAll(HostileDocuments.timesOut());
        Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        List<String> notes = Collections.synchronizedList(new ArrayList<>());
        List<Long> latencies = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger next = new AtomicInteger();
        AtomicInteger held = new AtomicInteger();
        AtomicInteger lost = new AtomicInteger();
        long t0;
        long took;
        // as qvm serve sizes it: sandboxes for the host's cores (a VM a core can drive), not one per
        // client; the clients beyond them wait in the server's queue, and each render keeps its own
        // deadline (four TCG VMs on two cores overran it for ordinary documents)
        int sandboxes = Math.max(2, Math.min(clients, Runtime.getRuntime().availableProcessors()));
        try (SandboxPool pool = SandboxPool.builder(backend, config).maxSandboxes(sandboxes).minIdle(1).build();
             QvmServer server = QvmServer.builder(pool).listen(new InetSocketAddress("127.0.0.1", 0)).tenants(tenants)
                     .build().start()) {
            URI base = URI.create("http://127.0.0.1:" + server.address().getPort());
            long readyBy = System.nanoTime() + config.bootTimeout().plus(pool.acquireTimeout()).toNanos();
            while (!server.isReady() && System.nanoTime() < readyBy) {
                sleep(200);
            }
            notes.add(server.isReady() ? "ready" : "not ready within the boot deadline; the requests wait for sandboxes");
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
            Duration timeout = config.requestTimeout().plus(pool.acquireTimeout()).plusSeconds(30);
            ExecutorService pool2 = Executors.newFixedThreadPool(clients);
            List<Future<?>> running = new ArrayList<>();
            t0 = System.nanoTime();
            for (int c = 0; c < clients; c++) {
                running.add(pool2.submit(() -> {
                    for (int i; (i = next.getAndIncrement()) < requests; ) {
                        String token = i % 2 == 0 ? alpha : beta;
                        String got;
                        boolean ok;
                        if (i % hostileEvery == hostileEvery - 1) {
                            int k = (i / hostileEvery) % (hostile.size() + 1);
                            if (k == 0) { // a forged token: a hash of the other tenant's is no token
                                got = "forged-token " + call(http, base, Tenants.sha256Hex(token),
                                        ordinary.get(0), timeout).outcome();
                                ok = got.endsWith(" HTTP 401 UNAUTHORIZED");
                            } else {
                                HostileDocuments.Case h = hostile.get(k - 1);
                                String o = call(http, base, token, h.request(), timeout).outcome();
                                ok = h.accepts(o);
                                got = h.name() + " " + o;
                            }
                        } else {
                            long s = System.nanoTime();
                            Answer a = call(http, base, token, ordinary.get(i % ordinary.size()), timeout);
                            got = a.outcome();
                            ok = got.equals("OK");
                            if (ok) {
                                latencies.add((System.nanoTime() - s) / 1_000_000);
                            }
                        }
                        outcomes.computeIfAbsent(got, x -> new AtomicInteger()).incrementAndGet();
                        (ok ? held : lost).incrementAndGet();
                        if (!ok) {
                            notes.add("request " + i + ": " + got);
                        }
                        if ((i + 1) % 20 == 0) {
                            say.accept("serve " + (i + 1) + "/" + requests);
                        }
                    }
                }));
            }
            for (Future<?> f : running) {
                try {
                    f.get();
                } catch (Exception e) {
                    lost.incrementAndGet();
                    notes.add("a client failed: " + e);
                }
            }
            took = System.nanoTime() - t0;
            pool2.shutdown();
            boolean drained = server.drain(Duration.ofSeconds(30));
            notes.add("drain: " + (drained ? "every request answered" : server.pending() + " still running"));
            notes.add("pool: " + pool.stats());
        }
        List<Long> sorted = new ArrayList<>(latencies);
        Collections.sort(sorted);
        if (!sorted.isEmpty()) {
            notes.add(String.format(java.util.Locale.ROOT, "ordinary documents over HTTP, %d clients: %d in %.1f s "
                    + "(%.1f a minute), latency p50 %d ms, p99 %d ms (%d sandboxes)", clients, sorted.size(), took / 1e9,
                    sorted.size() * 60e9 / took, pct(sorted, 50), pct(sorted, 99), sandboxes));
        }
        Map<String, Integer> counts = new java.util.TreeMap<>();
        outcomes.forEach((k, v) -> counts.put(k, v.get()));
        return new Result(requests, held.get(), lost.get(), counts, notes);
    }

    private static long pct(List<Long> sorted, int p) {
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p / 100.0 * sorted.size()) - 1));
    }

    /** One answer: its status and code, as the library's outcome would be named. */
    private record Answer(int status, String code) {
        /** OK; a worker's error code; LOST and the reason; else HTTP status code. */
        String outcome() {
            if (status == 200) {
                return "OK";
            }
            for (ErrorCode c : ErrorCode.values()) {
                if (c.name().equals(code) && c != ErrorCode.INTERNAL) {
                    return code;
                }
            }
            return switch (code) {
                case "DEADLINE_EXCEEDED" -> "LOST DEADLINE_EXCEEDED";
                case "SANDBOX_LOST" -> "LOST CRASHED";
                case "PROTOCOL_VIOLATION" -> "LOST PROTOCOL_VIOLATION";
                default -> "HTTP " + status + " " + code;
            };
        }
    }

    private static Answer call(HttpClient http, URI base, String token, RenderRequest r, Duration timeout) {
        for (int attempt = 1; ; attempt++) {
            try {
                HttpResponse<byte[]> resp = http.send(HttpRequest.newBuilder(base.resolve("/v1/render" + query(r)))
                        .header("Authorization", "Bearer " + token)
                        .header("Content-Type", r.type() == RenderRequest.Type.SVG ? "image/svg+xml" : "application/pdf")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(r.document())).timeout(timeout).build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                if (resp.statusCode() == 200) {
                    return new Answer(200, "OK");
                }
                JsonNode p = JSON.readTree(resp.body());
                String code = p.path("code").asText("NO_CODE");
                if ((resp.statusCode() == 429 || resp.statusCode() == 503) && attempt == 1) {
                    sleep(1000L * resp.headers().firstValue("Retry-After").map(Long::parseLong).orElse(1L));
                    continue;
                }
                return new Answer(resp.statusCode(), code);
            } catch (IOException e) {
                return new Answer(0, "IO " + e.getClass().getSimpleName());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Answer(0, "INTERRUPTED");
            }
        }
    }

    private static String query(RenderRequest r) {
        return r.dpi() != 0 ? "?dpi=" + r.dpi() : r.hasSize() ? "?width=" + r.width() + "&height=" + r.height() : "";
    }

    private static void sleep(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
