package io.qvm.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.server.Tenants;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code qvm serve} as a user runs it — its own JVM, real QEMU, the real image — rendering the
 * bundled samples over HTTP byte for byte as {@code qvm render} does, then SIGTERM while a
 * request is in flight: that request is answered, the process exits 0, and no QEMU is left.
 */
@Tag("e2e")
@Tag("qemu")
class ServeEndToEndTest {

    private static final Pattern LISTENING = Pattern.compile("listening on http://127\\.0\\.0\\.1:(\\d+)");

    @TempDir
    Path tmp;

    private Process serve;
    private final List<ProcessHandle> started = new ArrayList<>();

    @AfterEach
    void leaveNothingRunning() {
        if (serve != null) {
            serve.descendants().forEach(started::add);
            serve.destroyForcibly();
        }
        started.forEach(ProcessHandle::destroyForcibly);
    }

    @Test
    void rendersTheSamplesAsQvmRenderDoesAndDrainsOnSigterm() throws Exception {
        Path imageRoot = CliContext.system().imageRoot(null);
        Assumptions.assumeTrue(Files.isDirectory(imageRoot.resolve("x86_64")), "no guest image at " + imageRoot
                + "; run ./qvm image build");
        Path samples = Path.of("").toAbsolutePath().getParent().getParent().resolve("samples");
        Path state = tmp.resolve("state");
        String token = "e2e-" + Long.toHexString(System.nanoTime());
        Path tenants = tmp.resolve("tenants.txt");
        Files.writeString(tenants, "e2e:" + Tenants.sha256Hex(token) + "\n");

        // qvm render first (in-process): the bytes the service must give back
        CliContext ctx = CliRun.context(state, imageRoot, FakeImageTool.NO_BUILDS);
        CliRun.Result svgCli = CliRun.run(ctx, "render", samples.resolve("hello.svg").toString(), "--width", "480",
                "-o", tmp.resolve("svg-cli.png").toString());
        assertEquals(0, svgCli.exit(), svgCli.toString());
        CliRun.Result pdfCli = CliRun.run(ctx, "render", samples.resolve("hello.pdf").toString(), "--dpi", "144",
                "-o", tmp.resolve("pdf-cli.png").toString());
        assertEquals(0, pdfCli.exit(), pdfCli.toString());

        Path err = tmp.resolve("serve.err");
        ProcessBuilder pb = new ProcessBuilder(javaCommand(), "-cp", System.getProperty("java.class.path"),
                QvmCli.class.getName(), "serve", "--listen", "127.0.0.1:0", "--tokens", tenants.toString(),
                "--max-sandboxes", "2", "--min-idle", "1", "--boot-timeout", "600")
                .redirectOutput(tmp.resolve("serve.out").toFile()).redirectError(err.toFile());
        pb.environment().put("QVM_STATE", state.toString());
        pb.environment().put("QVM_IMAGE_DIR", imageRoot.toString());
        serve = pb.start();
        int port = await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200))
                .until(() -> port(err), p -> p > 0 || !serve.isAlive());
        assertTrue(serve.isAlive(), Files.readString(err));
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        URI base = URI.create("http://127.0.0.1:" + port);
        await().atMost(Duration.ofMinutes(15)).pollInterval(Duration.ofSeconds(1)).until(() ->
                http.send(HttpRequest.newBuilder(base.resolve("/readyz")).build(), HttpResponse.BodyHandlers
                        .discarding()).statusCode() == 200 || !serve.isAlive());
        assertTrue(serve.isAlive(), Files.readString(err));

        HttpResponse<byte[]> svg = http.send(HttpRequest.newBuilder(base.resolve("/v1/render?width=480"))
                .header("Authorization", "Bearer " + token).header("Content-Type", "image/svg+xml")
                .POST(HttpRequest.BodyPublishers.ofFile(samples.resolve("hello.svg"))).timeout(Duration.ofMinutes(10))
                .build(), HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, svg.statusCode(), new String(svg.body(), StandardCharsets.UTF_8));
        assertArrayEquals(Files.readAllBytes(tmp.resolve("svg-cli.png")), svg.body(), "the SVG as qvm render made it");
        assertEquals("480", svg.headers().firstValue("X-Qvm-Width").orElseThrow());

        String boundary = "qvmE2eBoundary";
        HttpResponse<byte[]> pdf = http.send(HttpRequest.newBuilder(base.resolve("/v1/render?dpi=144"))
                .header("Authorization", "Bearer " + token)
                .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                .POST(HttpRequest.BodyPublishers.ofByteArray(multipart(boundary,
                        Files.readAllBytes(samples.resolve("hello.pdf"))))).timeout(Duration.ofMinutes(10)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertEquals(200, pdf.statusCode(), new String(pdf.body(), StandardCharsets.UTF_8));
        assertArrayEquals(Files.readAllBytes(tmp.resolve("pdf-cli.png")), pdf.body(), "the PDF as qvm render made it");

        HttpResponse<String> broken = http.send(HttpRequest.newBuilder(base.resolve("/v1/render"))
                .header("Authorization", "Bearer " + token).header("Content-Type", "image/svg+xml")
                .POST(HttpRequest.BodyPublishers.ofString("<svg")).timeout(Duration.ofMinutes(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(422, broken.statusCode(), broken.body());
        assertTrue(broken.body().contains("\"PARSE_ERROR\""), broken.body());

        // SIGTERM with a request in flight: it is answered, the process exits 0, nothing is left
        CompletableFuture<HttpResponse<byte[]>> inFlight = http.sendAsync(HttpRequest.newBuilder(
                base.resolve("/v1/render?dpi=144")).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/pdf").POST(HttpRequest.BodyPublishers.ofFile(
                        samples.resolve("hello.pdf"))).timeout(Duration.ofMinutes(10)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        await().atMost(Duration.ofMinutes(2)).until(() -> Files.readString(tmp.resolve("serve.out"))
                .lines().filter(l -> l.contains(" render ")).count() >= 3
                && (inFlight.isDone() || inFlightStarted(http, base)));
        serve.descendants().forEach(started::add);
        serve.destroy(); // SIGTERM
        HttpResponse<byte[]> last = inFlight.get(10, TimeUnit.MINUTES);
        assertEquals(200, last.statusCode(), new String(last.body(), StandardCharsets.UTF_8));
        assertArrayEquals(Files.readAllBytes(tmp.resolve("pdf-cli.png")), last.body());
        assertTrue(serve.waitFor(5, TimeUnit.MINUTES), "qvm serve exits after its drain");
        String log = Files.readString(err);
        assertEquals(0, serve.exitValue(), log);
        assertTrue(log.contains("SIGTERM: draining"), log);
        assertTrue(log.contains("every request taken was answered"), log);
        assertFalse(started.isEmpty(), "the service had started QEMU");
        await().atMost(Duration.ofMinutes(1)).until(() -> started.stream().noneMatch(ProcessHandle::isAlive));
        assertTrue(isEmptyOrAbsent(state.resolve("sandboxes")), "no sandbox state left");
    }

    /** Whether the service has a render running now (its metrics say so). */
    private static boolean inFlightStarted(HttpClient http, URI base) throws IOException, InterruptedException {
        String m = http.send(HttpRequest.newBuilder(base.resolve("/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        return m.contains("qvm_http_render_in_flight 1.0");
    }

    private static int port(Path err) throws IOException {
        Matcher m = LISTENING.matcher(Files.exists(err) ? Files.readString(err) : "");
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    private static String javaCommand() {
        return ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString());
    }

    private static byte[] multipart(String boundary, byte[] pdf) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"hello.pdf\"\r\n"
                + "Content-Type: application/pdf\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(pdf);
        out.writeBytes(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.US_ASCII));
        return out.toByteArray();
    }

    private static boolean isEmptyOrAbsent(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return true;
        }
        try (var s = Files.list(dir)) {
            return s.findAny().isEmpty();
        }
    }
}
