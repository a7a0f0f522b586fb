package io.qvm.server;

import io.qvm.SandboxConfig;
import io.qvm.SandboxPool;
import io.qvm.testing.FakeSandboxBackend;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

/**
 * A {@link QvmServer} on a free loopback port over a real {@link SandboxPool} on the
 * {@link FakeSandboxBackend} (documents render in this JVM with the worker's renderer: no VM),
 * with two tenants, {@code alpha} and {@code beta}.
 */
final class ServerFixture implements AutoCloseable {

    static final String ALPHA_TOKEN = "alpha-token-0123456789";
    static final String BETA_TOKEN = "beta-token-9876543210";
    static final byte[] SVG = ("<svg xmlns='http://www.w3.org/2000/svg' width='40' height='20'>"
            + "<rect width='40' height='20' fill='#3366cc'/></svg>").getBytes(StandardCharsets.UTF_8);

    final FakeSandboxBackend backend = new FakeSandboxBackend();
    final SandboxPool pool;
    final QvmServer server;
    final List<String> accessLog = new CopyOnWriteArrayList<>();
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    ServerFixture() {
        this(SandboxConfig.defaults(), p -> p, s -> s);
    }

    ServerFixture(SandboxConfig config, UnaryOperator<SandboxPool.Builder> pool,
            UnaryOperator<QvmServer.Builder> server) {
        this.pool = pool.apply(SandboxPool.builder(backend, config).maxSandboxes(2).minIdle(0)
                .warmUpRender(false)).build();
        Tenants tenants = Tenants.parse(List.of("alpha:" + Tenants.sha256Hex(ALPHA_TOKEN),
                "beta:" + Tenants.sha256Hex(BETA_TOKEN)), "test");
        this.server = server.apply(QvmServer.builder(this.pool).listen(new InetSocketAddress("127.0.0.1", 0))
                .tenants(tenants).accessLog(accessLog::add)).build().start();
    }

    URI uri(String pathAndQuery) {
        return URI.create("http://127.0.0.1:" + server.address().getPort() + pathAndQuery);
    }

    int port() {
        return server.address().getPort();
    }

    HttpRequest.Builder render(String query, String token, String type, byte[] body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri("/v1/render" + query)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", type).POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return b;
    }

    HttpResponse<byte[]> send(HttpRequest request) throws Exception {
        return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
    }

    HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Override
    public void close() {
        backend.releaseRenders();
        server.close();
        pool.close();
        backend.close();
    }
}
