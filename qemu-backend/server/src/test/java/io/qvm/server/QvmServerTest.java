package io.qvm.server;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.HostSetupException;
import io.qvm.SandboxConfig;
import io.qvm.SandboxException;
import io.qvm.SandboxLostException;
import io.qvm.SandboxPool;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.server.internal.Problem;
import io.qvm.testing.FakeSandboxBackend;
import java.io.ByteArrayOutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code qvm serve}'s HTTP contract on real sockets, over a real pool on the fake backend: what a
 * render answers, each typed error's status, tenants, caps, readiness and the drain.
 */
@Tag("unit")
class QvmServerTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

    @Test
    void aRenderAnswersThePngTheLibraryMakesWithItsSizeTimeAndRequestId() throws Exception {
        try (ServerFixture f = new ServerFixture()) {
            HttpResponse<byte[]> r = f.send(f.render("?width=80", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build());
            assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
            assertEquals("image/png", r.headers().firstValue("Content-Type").orElseThrow());
            assertArrayEquals(PNG, Arrays.copyOf(r.body(), 8));
            assertEquals("80", r.headers().firstValue("X-Qvm-Width").orElseThrow());
            assertEquals("40", r.headers().firstValue("X-Qvm-Height").orElseThrow());
            assertTrue(r.headers().firstValue("X-Qvm-Render-Millis").isPresent());
            assertEquals(16, r.headers().firstValue("X-Request-Id").orElseThrow().length());
            assertEquals("alpha", r.headers().firstValue("X-Qvm-Tenant").orElseThrow());
            assertEquals("no-store", r.headers().firstValue("Cache-Control").orElseThrow());
            // the same request through the library directly: the same bytes
            RenderResult direct = f.pool.render(RenderRequest.svg(ServerFixture.SVG).withSize(80, 0));
            assertArrayEquals(direct.png(), r.body());
        }
    }

    @Test
    void aMultipartFilePartRendersAsTheSameBodyWould() throws Exception {
        try (ServerFixture f = new ServerFixture()) {
            byte[] raw = f.send(f.render("?dpi=192", ServerFixture.ALPHA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .build()).body();
            for (String partType : List.of("image/svg+xml", "application/octet-stream")) {
                String boundary = "qvmBoundary7MA4YWxkTrZu0gW";
                byte[] body = multipart(boundary, "file", "doc.svg", partType, ServerFixture.SVG);
                HttpResponse<byte[]> r = f.send(f.render("?dpi=192", ServerFixture.ALPHA_TOKEN,
                        "multipart/form-data; boundary=" + boundary, body).build());
                assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
                assertArrayEquals(raw, r.body(), partType);
                assertEquals("80", r.headers().firstValue("X-Qvm-Width").orElseThrow());
            }
        }
    }

    @Test
    void badInputGetsItsStatusBeforeAnySandboxIsUsed() throws Exception {
        try (ServerFixture f = new ServerFixture()) {
            assertProblem(f.send(f.render("", ServerFixture.ALPHA_TOKEN, "text/plain", ServerFixture.SVG).build()),
                    415, "UNSUPPORTED_MEDIA_TYPE");
            assertProblem(f.send(f.render("?width=80&dpi=96", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build()), 400, "BAD_REQUEST");
            assertProblem(f.send(f.render("?width=-3", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build()), 400, "BAD_REQUEST");
            assertProblem(f.send(f.render("?zoom=2", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build()), 400, "BAD_REQUEST");
            assertProblem(f.send(f.render("?width=1&width=2", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build()), 400, "BAD_REQUEST");
            assertProblem(f.send(f.render("?background=%23GG0000", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build()), 400, "BAD_REQUEST");
            assertProblem(f.send(f.render("?page=2", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build()), 400, "BAD_REQUEST");
            assertProblem(f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml", new byte[0]).build()),
                    400, "BAD_REQUEST");
            String boundary = "b0undary";
            assertProblem(f.send(f.render("", ServerFixture.ALPHA_TOKEN, "multipart/form-data; boundary=" + boundary,
                    multipart(boundary, "document", "x.svg", "image/svg+xml", ServerFixture.SVG)).build()), 400,
                    "BAD_REQUEST");
            assertProblem(f.send(f.render("", ServerFixture.ALPHA_TOKEN, "multipart/form-data; boundary=" + boundary,
                    multipart(boundary, "file", "x.txt", "text/plain", ServerFixture.SVG)).build()), 415,
                    "UNSUPPORTED_MEDIA_TYPE");
            assertProblem(f.get("/v2/render"), 404, "NOT_FOUND");
            HttpResponse<String> wrongMethod = f.get("/v1/render");
            assertProblem(wrongMethod, 405, "METHOD_NOT_ALLOWED");
            assertEquals("POST", wrongMethod.headers().firstValue("Allow").orElseThrow());
            assertEquals(0, f.backend.renders().size(), "nothing reached a sandbox");
            // and the server still renders
            assertEquals(200, f.send(f.render("", ServerFixture.BETA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .build()).statusCode());
        }
    }

    @Test
    void aBodyAboveMaxRequestBytesIs413FromItsContentLength() throws Exception {
        SandboxConfig small = SandboxConfig.builder().maxRequestBytes(64 * 1024).build();
        try (ServerFixture f = new ServerFixture(small, p -> p, s -> s)) {
            byte[] big = new byte[64 * 1024 + 1];
            Arrays.fill(big, (byte) ' ');
            HttpResponse<byte[]> r = f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml", big).build());
            assertProblem(r, 413, "TOO_LARGE");
            // a multipart envelope around a too-large document: refused after reading, still 413
            String boundary = "b0undary";
            r = f.send(f.render("", ServerFixture.ALPHA_TOKEN, "multipart/form-data; boundary=" + boundary,
                    multipart(boundary, "file", "x.svg", "image/svg+xml", big)).build());
            assertProblem(r, 413, "TOO_LARGE");
            assertEquals(0, f.backend.renders().size());
        }
    }

    @Test
    void withoutAValidTokenNothingButTheProbesAnswers() throws Exception {
        try (ServerFixture f = new ServerFixture()) {
            HttpResponse<byte[]> none = f.send(f.render("", null, "image/svg+xml", ServerFixture.SVG).build());
            assertProblem(none, 401, "UNAUTHORIZED");
            assertEquals("Bearer realm=\"qvm\"", none.headers().firstValue("WWW-Authenticate").orElseThrow());
            assertProblem(f.send(f.render("", "wrong-token", "image/svg+xml", ServerFixture.SVG).build()), 401,
                    "UNAUTHORIZED");
            // the hash itself is not a token
            assertProblem(f.send(f.render("", Tenants.sha256Hex(ServerFixture.ALPHA_TOKEN), "image/svg+xml",
                    ServerFixture.SVG).build()), 401, "UNAUTHORIZED");
            assertProblem(f.send(HttpRequest.newBuilder(f.uri("/v1/render")).header("Content-Type", "image/svg+xml")
                    .header("Authorization", "Basic " + ServerFixture.ALPHA_TOKEN)
                    .POST(HttpRequest.BodyPublishers.ofByteArray(ServerFixture.SVG)).build()), 401, "UNAUTHORIZED");
            assertProblem(f.get("/v1/info"), 401, "UNAUTHORIZED");
            assertEquals(200, f.get("/healthz").statusCode());
            assertEquals(0, f.backend.renders().size());
        }
    }

    @Test
    void theTenantIsTheTokensAndNoHeaderOrParameterChoosesAnother() throws Exception {
        // perCaller: a sandbox serves one caller key only, so the tenants' sandboxes tell who was served
        try (ServerFixture f = new ServerFixture(SandboxConfig.defaults(),
                p -> p.recycle(SandboxPool.Recycle.perCaller()), s -> s)) {
            HttpResponse<byte[]> a = f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .header("X-Qvm-Tenant", "beta").header("X-Tenant", "beta").build());
            assertEquals(200, a.statusCode());
            assertEquals("alpha", a.headers().firstValue("X-Qvm-Tenant").orElseThrow());
            HttpResponse<byte[]> b = f.send(f.render("", ServerFixture.BETA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .build());
            assertEquals("beta", b.headers().firstValue("X-Qvm-Tenant").orElseThrow());
            assertEquals(2, f.backend.sandboxes().size(), "two tenants, two VMs, though the policy reuses");
            HttpResponse<byte[]> a2 = f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build());
            assertEquals(200, a2.statusCode());
            assertEquals(2, f.backend.sandboxes().size(), "alpha's second request reused alpha's VM");
            assertTrue(f.accessLog.stream().anyMatch(l -> l.contains(" alpha render 200 ")), f.accessLog.toString());
        }
    }

    static Stream<Arguments> typedErrors() {
        List<Arguments> rows = new ArrayList<>();
        for (ErrorCode c : ErrorCode.values()) {
            rows.add(Arguments.of(c.name(), FakeSandboxBackend.renderFailed(c)));
        }
        rows.add(Arguments.of("oom", FakeSandboxBackend.outOfMemory()));
        rows.add(Arguments.of("deadline", FakeSandboxBackend.sandboxLost(SandboxLostException.Reason.DEADLINE_EXCEEDED)));
        rows.add(Arguments.of("violation", FakeSandboxBackend.sandboxLost(
                SandboxLostException.Reason.PROTOCOL_VIOLATION)));
        rows.add(Arguments.of("pool timeout", FakeSandboxBackend.poolTimeout()));
        rows.add(Arguments.of("host", FakeSandboxBackend.hostSetup(HostSetupException.Problem.QEMU_NOT_FOUND)));
        rows.add(Arguments.of("boot", FakeSandboxBackend.bootFailed()));
        return rows.stream();
    }

    /** Each typed error answers the status, code and retry advice of Problem's table (the README's). */
    @ParameterizedTest(name = "{0}")
    @MethodSource("typedErrors")
    void everyTypedErrorAnswersItsRowOfTheTable(String name, SandboxException error) throws Exception {
        try (ServerFixture f = new ServerFixture(SandboxConfig.defaults(), p -> p, s -> s.warmUp(false))) {
            boolean boot = error instanceof io.qvm.BootFailedException || error instanceof HostSetupException;
            if (boot) {
                for (int i = 0; i < 3; i++) { // the pool tries a start more than once
                    f.backend.failNextStart(error);
                }
            } else {
                f.backend.failNextRender(error);
            }
            HttpResponse<byte[]> r = f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .build());
            Problem expected = Problem.of(error);
            JsonNode p = assertProblem(r, expected.status(), expected.code());
            assertEquals(expected.retryable(), p.get("retryable").asBoolean());
            assertEquals(expected.retryAfterSeconds() > 0, r.headers().firstValue("Retry-After").isPresent());
            assertFalse(p.get("detail").asText().contains("\n"), "one line of detail, no console tail");
            assertTrue(expected.status() >= 400);
        }
    }

    @Test
    void aCrashIsRetriedOnceByThePoolAndASecondOneIs502() throws Exception {
        try (ServerFixture f = new ServerFixture()) {
            f.backend.failNextRender(FakeSandboxBackend.sandboxLost(SandboxLostException.Reason.CRASHED));
            assertEquals(200, f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .build()).statusCode(), "the pool's retry rendered it");
            f.backend.failNextRender(FakeSandboxBackend.sandboxLost(SandboxLostException.Reason.CRASHED));
            f.backend.failNextRender(FakeSandboxBackend.sandboxLost(SandboxLostException.Reason.CRASHED));
            JsonNode p = assertProblem(f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build()), 502, "SANDBOX_LOST");
            assertTrue(p.get("retryable").asBoolean());
        }
    }

    @Test
    void aFullQueueAndATenantAtItsCapAre429WithRetryAfter() throws Exception {
        try (ServerFixture f = new ServerFixture(SandboxConfig.defaults(), p -> p.maxSandboxes(1),
                s -> s.maxQueue(1).tenantMaxRequests(1))) {
            f.backend.holdRenders();
            CompletableFuture<HttpResponse<byte[]>> alpha = f.http.sendAsync(f.render("", ServerFixture.ALPHA_TOKEN,
                    "image/svg+xml", ServerFixture.SVG).build(), HttpResponse.BodyHandlers.ofByteArray());
            await().atMost(Duration.ofSeconds(20)).until(() -> f.backend.heldRenders() == 1);
            // alpha has one in flight: its cap
            HttpResponse<byte[]> capped = f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build());
            assertProblem(capped, 429, "TENANT_BUSY");
            assertEquals("1", capped.headers().firstValue("Retry-After").orElseThrow());
            // beta queues behind it (the one render thread is busy)
            CompletableFuture<HttpResponse<byte[]>> beta = f.http.sendAsync(f.render("", ServerFixture.BETA_TOKEN,
                    "image/svg+xml", ServerFixture.SVG).build(), HttpResponse.BodyHandlers.ofByteArray());
            await().atMost(Duration.ofSeconds(20)).until(() -> f.server.pending() == 2);
            assertTrue(f.get("/metrics").body().contains("qvm_http_render_queue 1.0"));
            // a third tenant's request would find the queue full; beta's second is at beta's cap first
            assertProblem(f.send(f.render("", ServerFixture.BETA_TOKEN, "image/svg+xml", ServerFixture.SVG).build()),
                    429, "TENANT_BUSY");
            f.backend.releaseRenders();
            assertEquals(200, alpha.get(30, TimeUnit.SECONDS).statusCode());
            assertEquals(200, beta.get(30, TimeUnit.SECONDS).statusCode());
        }
        try (ServerFixture f = new ServerFixture(SandboxConfig.defaults(), p -> p.maxSandboxes(1),
                s -> s.maxQueue(0))) {
            f.backend.holdRenders();
            CompletableFuture<HttpResponse<byte[]>> first = f.http.sendAsync(f.render("", ServerFixture.ALPHA_TOKEN,
                    "image/svg+xml", ServerFixture.SVG).build(), HttpResponse.BodyHandlers.ofByteArray());
            await().atMost(Duration.ofSeconds(20)).until(() -> f.backend.heldRenders() == 1);
            HttpResponse<byte[]> full = f.send(f.render("", ServerFixture.BETA_TOKEN, "image/svg+xml",
                    ServerFixture.SVG).build());
            assertProblem(full, 429, "QUEUE_FULL");
            f.backend.releaseRenders();
            assertEquals(200, first.get(30, TimeUnit.SECONDS).statusCode());
        }
    }

    @Test
    void readinessFollowsTheWarmUpAndTheDrainWhileHealthStaysUp() throws Exception {
        try (ServerFixture f = new ServerFixture()) {
            await().atMost(Duration.ofSeconds(20)).until(() -> f.get("/readyz").statusCode() == 200);
            assertEquals("ready\n", f.get("/readyz").body());
            assertTrue(f.server.isReady());
            assertEquals(1, f.backend.starts(), "the warm-up started the one sandbox ahead");
            // readiness after a drain began, on a connection opened before it: 503 with the reason
            java.net.http.HttpClient keep = java.net.http.HttpClient.newHttpClient();
            assertEquals(200, keep.send(HttpRequest.newBuilder(f.uri("/healthz")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode());
            f.server.drain(Duration.ofSeconds(5));
            assertFalse(f.server.isReady());
        }
    }

    @Test
    void aFailedWarmUpKeepsReadinessAt503WithItsReasonAndIsRetried() throws Exception {
        FakeSandboxBackend backend = new FakeSandboxBackend();
        for (int i = 0; i < 6; i++) {
            backend.failNextStart(FakeSandboxBackend.bootFailed());
        }
        try (SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.defaults()).maxSandboxes(1).minIdle(0)
                .build();
             QvmServer server = QvmServer.builder(pool).listen(new InetSocketAddress("127.0.0.1", 0))
                     .warmUpRetry(Duration.ofMillis(200)).build().start()) {
            java.net.http.HttpClient c = java.net.http.HttpClient.newHttpClient();
            java.net.URI ready = java.net.URI.create("http://127.0.0.1:" + server.address().getPort() + "/readyz");
            await().atMost(Duration.ofSeconds(20)).until(() -> c.send(HttpRequest.newBuilder(ready).build(),
                    HttpResponse.BodyHandlers.ofString()).body().contains("warm-up failed"));
            HttpResponse<String> r = c.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, r.statusCode());
            assertTrue(r.headers().firstValue("Retry-After").isPresent());
            // the scripted failures run out: a later warm-up succeeds
            await().atMost(Duration.ofSeconds(30)).until(server::isReady);
            assertEquals(200, c.send(HttpRequest.newBuilder(ready).build(), HttpResponse.BodyHandlers.ofString())
                    .statusCode());
        } finally {
            backend.close();
        }
    }

    @Test
    void aDrainFinishesWhatItTookAndTakesNothingNew() throws Exception {
        ServerFixture f = new ServerFixture();
        try (f) {
            await().atMost(Duration.ofSeconds(20)).until(f.server::isReady);
            f.backend.holdRenders();
            CompletableFuture<HttpResponse<byte[]>> inFlight = f.http.sendAsync(f.render("",
                    ServerFixture.ALPHA_TOKEN, "image/svg+xml", ServerFixture.SVG).build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            await().atMost(Duration.ofSeconds(20)).until(() -> f.backend.heldRenders() == 1);
            CompletableFuture<Boolean> drained = CompletableFuture.supplyAsync(() -> f.server.drain(
                    Duration.ofSeconds(30)));
            await().atMost(Duration.ofSeconds(20)).until(() -> !f.server.isReady());
            // the listening socket is closed: a new connection is refused
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                Exception e = assertThrows(Exception.class, () -> new java.net.Socket("127.0.0.1", f.port()).close());
                assertTrue(e instanceof ConnectException, e.toString());
            });
            assertFalse(drained.isDone(), "the drain waits for the request it took");
            f.backend.releaseRenders();
            HttpResponse<byte[]> r = inFlight.get(30, TimeUnit.SECONDS);
            assertEquals(200, r.statusCode());
            assertEquals("close", r.headers().firstValue("Connection").orElse("close"));
            assertTrue(drained.get(30, TimeUnit.SECONDS), "every request taken was answered");
        }
        assertEquals(0, f.backend.liveSandboxes(), "the pool closed every sandbox");
    }

    @Test
    void aRequestArrivingOnAnOpenConnectionDuringTheDrainIs503AndTheConnectionCloses() throws Exception {
        try (ServerFixture f = new ServerFixture();
             java.net.Socket s = new java.net.Socket("127.0.0.1", f.port())) {
            s.setSoTimeout(20_000);
            java.io.OutputStream out = s.getOutputStream();
            out.write(("POST /v1/render HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ServerFixture.ALPHA_TOKEN
                    + "\r\n").getBytes(StandardCharsets.US_ASCII)); // headers begun, not finished
            out.flush();
            await().atMost(Duration.ofSeconds(10)).until(() -> f.get("/metrics").body()
                    .contains("qvm_http_connections 2.0"));
            assertTrue(f.server.drain(Duration.ofSeconds(5)), "nothing was taken");
            out.write(("Content-Type: image/svg+xml\r\nContent-Length: " + ServerFixture.SVG.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(ServerFixture.SVG);
            out.flush();
            String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertTrue(answer.startsWith("HTTP/1.1 503 "), answer);
            assertTrue(answer.contains("\"code\" : \"SHUTTING_DOWN\""), answer);
            assertTrue(answer.toLowerCase(java.util.Locale.ROOT).contains("connection: close"), answer);
            assertEquals(0, f.backend.renders().size());
        }
    }

    @Test
    void metricsAndInfoSayWhatTheServiceDid() throws Exception {
        try (ServerFixture f = new ServerFixture(SandboxConfig.defaults(), p -> p, s -> s.about("accelerator", "tcg"))) {
            assertEquals(200, f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .build()).statusCode());
            assertProblem(f.send(f.render("", ServerFixture.ALPHA_TOKEN, "text/plain", ServerFixture.SVG).build()),
                    415, "UNSUPPORTED_MEDIA_TYPE");
            HttpResponse<String> m = f.get("/metrics");
            assertEquals(200, m.statusCode());
            assertTrue(m.headers().firstValue("Content-Type").orElseThrow().startsWith("text/plain; version=0.0.4"));
            String text = m.body();
            for (String line : List.of(
                    "qvm_http_requests_seconds_count{code=\"OK\",endpoint=\"render\",status=\"200\"} 1",
                    "qvm_http_requests_seconds_count{code=\"UNSUPPORTED_MEDIA_TYPE\",endpoint=\"render\",status=\"415\"} 1",
                    "qvm_pool_requests_total{outcome=\"rendered\"} 1",
                    "qvm_http_render_in_flight 0",
                    "qvm_http_render_queue 0",
                    "qvm_http_draining 0")) {
                assertTrue(text.contains(line), "metrics lack " + line + ":\n" + text);
            }
            for (String name : List.of("qvm_pool_render_seconds_bucket", "qvm_http_requests_seconds_bucket",
                    "qvm_pool_sandboxes", "qvm_pool_starts_total", "qvm_pool_crashes_total",
                    "qvm_pool_retries_total", "qvm_pool_protocol_violations_total", "qvm_build_info",
                    "process_files_open_files", "jvm_memory_used_bytes")) {
                assertTrue(text.contains(name), "metrics lack " + name);
            }
            HttpResponse<byte[]> info = f.send(HttpRequest.newBuilder(f.uri("/v1/info"))
                    .header("Authorization", "Bearer " + ServerFixture.BETA_TOKEN).GET().build());
            assertEquals(200, info.statusCode());
            JsonNode i = JSON.readTree(info.body());
            assertEquals("tcg", i.get("accelerator").asText());
            assertEquals(SandboxConfig.defaults().maxRequestBytes(), i.get("limits").get("maxRequestBytes").asLong());
            assertTrue(i.get("service").get("tenantsRequired").asBoolean());
            assertTrue(i.has("version"));
        }
    }

    @Test
    void itRefusesToListenBeyondLoopbackWithoutTenantsUnlessToldItIsInsecure() throws Exception {
        FakeSandboxBackend backend = new FakeSandboxBackend();
        try (SandboxPool pool = SandboxPool.of(backend, SandboxConfig.defaults(), 1)) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> QvmServer.builder(pool).listen(new InetSocketAddress("0.0.0.0", 0)).build());
            assertTrue(e.getMessage().contains("without tenants"), e.getMessage());
            try (QvmServer s = QvmServer.builder(pool).listen(new InetSocketAddress("0.0.0.0", 0)).insecure(true)
                    .warmUp(false).build().start()) {
                assertTrue(s.address().getPort() > 0);
            }
            // loopback without tenants: anonymous
            try (QvmServer s = QvmServer.builder(pool).listen(new InetSocketAddress("127.0.0.1", 0)).warmUp(false)
                    .build().start()) {
                HttpResponse<byte[]> r = java.net.http.HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        java.net.URI.create("http://127.0.0.1:" + s.address().getPort() + "/v1/render"))
                        .header("Content-Type", "image/svg+xml").POST(HttpRequest.BodyPublishers.ofByteArray(
                                ServerFixture.SVG)).build(), HttpResponse.BodyHandlers.ofByteArray());
                assertEquals(200, r.statusCode());
                assertEquals(Tenants.ANONYMOUS, r.headers().firstValue("X-Qvm-Tenant").orElseThrow());
            }
        } finally {
            backend.close();
        }
    }

    static JsonNode assertProblem(HttpResponse<?> r, int status, String code) throws Exception {
        String body = r.body() instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(r.body());
        assertEquals(status, r.statusCode(), body);
        assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElseThrow());
        JsonNode p = JSON.readTree(body);
        assertEquals(code, p.get("code").asText(), body);
        assertEquals(status, p.get("status").asInt());
        assertEquals(r.headers().firstValue("X-Request-Id").orElseThrow(), p.get("requestId").asText());
        assertTrue(p.get("type").asText().startsWith("urn:qvm:problem:"));
        return p;
    }

    static byte[] multipart(String boundary, String name, String filename, String type, byte[] content) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String head = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"; filename=\""
                + filename + "\"\r\nContent-Type: " + type + "\r\n\r\n";
        out.writeBytes(head.getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(content);
        out.writeBytes(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.US_ASCII));
        return out.toByteArray();
    }
}
