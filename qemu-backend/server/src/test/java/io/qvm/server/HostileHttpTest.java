package io.qvm.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.SandboxConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Clients that do not play by the rules, on raw sockets: each gets its status promptly (or its
 * connection closed), and the server goes on serving everyone else. After each, a well-formed
 * render must still come back 200 and no connection may be left open.
 */
@Tag("unit")
@Tag("security")
class HostileHttpTest {

    private static final Duration HEADER_TIMEOUT = Duration.ofMillis(700);
    private static final Duration READ_TIMEOUT = Duration.ofMillis(1500);
    private static final long MAX_BYTES = 64 * 1024;

    private ServerFixture f;

    @BeforeEach
    void start() {
        f = new ServerFixture(SandboxConfig.builder().maxRequestBytes(MAX_BYTES).build(), p -> p,
                s -> s.headerTimeout(HEADER_TIMEOUT).readTimeout(READ_TIMEOUT).idleTimeout(Duration.ofSeconds(3))
                        .maxConnections(32).warmUp(false));
    }

    @AfterEach
    void stillServesAndLeavesNothingOpen() throws Exception {
        try {
            assertEquals(200, f.send(f.render("", ServerFixture.ALPHA_TOKEN, "image/svg+xml", ServerFixture.SVG)
                    .build()).statusCode(), "the server still renders");
        } finally {
            f.close();
        }
    }

    @Test
    void slowHeadersGet408AndTheConnectionCloses() throws Exception {
        try (Socket s = socket()) {
            write(s, "POST /v1/render HTTP/1.1\r\nHost: x\r\n");
            long t0 = System.nanoTime();
            for (int i = 0; i < 4; i++) { // a header line a while, never the end of the headers
                Thread.sleep(250);
                try {
                    write(s, "X-Drip-" + i + ": 1\r\n");
                } catch (SocketException closed) {
                    break;
                }
            }
            Answer a = read(s);
            assertEquals(408, a.status(), a.text());
            assertTrue(a.text().contains("REQUEST_TIMEOUT"), a.text());
            assertTrue(a.closed(), "closed after the 408");
            assertTrue(Duration.ofNanos(System.nanoTime() - t0).toMillis() < 10_000, "promptly");
        }
    }

    @Test
    void aSlowBodyGets408() throws Exception {
        try (Socket s = socket()) {
            write(s, head("image/svg+xml", "Content-Length: 1000\r\n"));
            for (int i = 0; i < 10; i++) {
                Thread.sleep(200);
                try {
                    write(s, "<");
                } catch (SocketException closed) {
                    break;
                }
            }
            Answer a = read(s);
            assertEquals(408, a.status(), a.text());
            assertTrue(a.closed());
        }
        assertEquals(0, f.backend.renders().size());
    }

    @Test
    void aContentLengthAboveTheLimitIs413BeforeTheBodyIsSent() throws Exception {
        try (Socket s = socket()) {
            write(s, head("image/svg+xml", "Content-Length: " + (MAX_BYTES + 1) + "\r\n"));
            Answer a = read(s);
            assertEquals(413, a.status(), a.text());
            assertTrue(a.text().contains("TOO_LARGE"));
            assertTrue(a.closed());
        }
        // and with Expect: 100-continue, the body is never asked for
        try (Socket s = socket()) {
            write(s, head("image/svg+xml", "Content-Length: 10000000\r\nExpect: 100-continue\r\n"));
            Answer a = read(s);
            assertEquals(413, a.status(), a.text());
            assertTrue(!a.text().contains("100 Continue"), a.text());
        }
    }

    @Test
    void anEndlessChunkedBodyIsCutAt413() throws Exception {
        try (Socket s = socket()) {
            write(s, head("image/svg+xml", "Transfer-Encoding: chunked\r\n"));
            String chunk = Integer.toHexString(8192) + "\r\n" + " ".repeat(8192) + "\r\n";
            long sent = 0;
            try {
                while (sent < 256L << 20) { // far past the cap and any socket buffer, unless the server stops it
                    write(s, chunk);
                    sent += 8192;
                }
            } catch (SocketException stopped) {
                // the server answered and closed
            }
            Answer a = read(s);
            assertEquals(413, a.status(), a.text());
            assertTrue(a.closed(), "closed after the 413");
            // the connection was closed, not drained: the writes failed once the sockets' buffers were full
            assertTrue(sent < 64L << 20, "the server stopped reading (sent " + sent + ")");
        }
        assertEquals(0, f.backend.renders().size());
    }

    @Test
    void bodiesHeldAtOnceAreBoundedAcrossConnectionsAndGivenBack() throws Exception {
        // the budget here: (2 render threads + a queue of 4 + 2) x (64 KiB + the multipart slack) = 1 MiB
        List<Socket> stalled = new ArrayList<>();
        try {
            for (int i = 0; i < 17; i++) { // 17 x 60,000 bytes promised fit; the 18th does not
                Socket s = socket();
                write(s, head("image/svg+xml", "Content-Length: 60000\r\n") + "<svg");
                stalled.add(s);
            }
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertEquals(
                    17 * 60_000.0, buffered()));
            try (Socket s = socket()) {
                write(s, head("image/svg+xml", "Content-Length: 60000\r\n"));
                Answer a = read(s);
                assertEquals(429, a.status(), a.text());
                assertTrue(a.text().contains("BODIES_BUSY") && a.text().contains("retry-after: 1"), a.text());
            }
            for (Socket s : stalled) {
                assertEquals(408, read(s).status(), "the stalled bodies time out");
            }
        } finally {
            for (Socket s : stalled) {
                s.close();
            }
        }
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertEquals(0.0,
                buffered()));
    }

    private double buffered() throws Exception {
        for (String line : f.get("/metrics").body().split("\n")) {
            if (line.startsWith("qvm_http_buffered_bytes ")) {
                return Double.parseDouble(line.substring(line.indexOf(' ') + 1));
            }
        }
        throw new AssertionError("no qvm_http_buffered_bytes");
    }

    @Test
    void thousandsOfHeadersAre431() throws Exception {
        try (Socket s = socket()) {
            StringBuilder b = new StringBuilder("GET /healthz HTTP/1.1\r\nHost: x\r\n");
            for (int i = 0; i < 5000; i++) {
                b.append("X-H").append(i).append(": v\r\n");
            }
            b.append("\r\n");
            try {
                write(s, b.toString());
            } catch (SocketException closed) {
                // answered and closed while we were still writing
            }
            Answer a = read(s);
            assertEquals(431, a.status(), a.text());
        }
    }

    @Test
    void aHugeRequestLineIs414() throws Exception {
        try (Socket s = socket()) {
            try {
                write(s, "GET /healthz?" + "a".repeat(20_000) + " HTTP/1.1\r\nHost: x\r\n\r\n");
            } catch (SocketException closed) {
                // fine
            }
            Answer a = read(s);
            assertEquals(414, a.status(), a.text());
        }
    }

    @Test
    void garbageIs400() throws Exception {
        try (Socket s = socket()) {
            write(s, "\u0001\u0002 NOT HTTP AT ALL\r\n\r\n");
            Answer a = read(s);
            assertTrue(a.status() == 400 || a.closed() && a.status() == 0, a.text());
        }
    }

    @Test
    void malformedMultipartIs400() throws Exception {
        for (String body : List.of(
                "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.svg\"\r\n\r\n<svg/>", // no end
                "no boundary at all",
                "--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n")) { // a part without a name
            try (Socket s = socket()) {
                write(s, head("multipart/form-data; boundary=b", "Content-Length: " + body.length() + "\r\n") + body);
                Answer a = read(s);
                assertEquals(400, a.status(), body + " -> " + a.text());
            }
        }
        try (Socket s = socket()) { // multipart without a boundary parameter
            String body = "--b\r\n";
            write(s, head("multipart/form-data", "Content-Length: " + body.length() + "\r\n") + body);
            assertEquals(400, read(s).status());
        }
        assertEquals(0, f.backend.renders().size());
    }

    @Test
    void aWrongTokenIs401BeforeTheBodyIsRead() throws Exception {
        try (Socket s = socket()) {
            write(s, "POST /v1/render HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Type: image/svg+xml\r\n"
                    + "Content-Length: 50000\r\n\r\n");
            Answer a = read(s);
            assertEquals(401, a.status(), a.text());
            assertTrue(a.closed(), "closed: the body is never read");
        }
    }

    @Test
    void aConnectionFloodBeyondTheCapIsClosedAndServiceGoesOn() throws Exception {
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < 60; i++) {
                held.add(socket());
            }
            int closed = 0;
            for (Socket s : held) {
                s.setSoTimeout(2000);
                try {
                    if (s.getInputStream().read() < 0) {
                        closed++;
                    }
                } catch (SocketTimeoutException open) {
                    // kept: within the cap, waiting for a request
                } catch (SocketException reset) {
                    closed++;
                }
            }
            assertTrue(closed >= 60 - 32, "connections beyond the cap of 32 were closed: " + closed);
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> openConnections() == 0);
    }

    @Test
    void manyClientsAtOnceEachGetTheirAnswer() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<CompletableFuture<Integer>> all = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                int n = i;
                all.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        if (n % 10 == 0) { // one in ten hostile: a slow body that times out
                            try (Socket s = socket()) {
                                write(s, head("image/svg+xml", "Content-Length: 100\r\n") + "<svg");
                                return read(s).status();
                            }
                        }
                        return f.send(f.render("", n % 2 == 0 ? ServerFixture.ALPHA_TOKEN : ServerFixture.BETA_TOKEN,
                                "image/svg+xml", ServerFixture.SVG).build()).statusCode();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }, pool));
            }
            int ok = 0;
            int timedOut = 0;
            int busy = 0;
            for (CompletableFuture<Integer> c : all) {
                int status = c.get(60, TimeUnit.SECONDS);
                ok += status == 200 ? 1 : 0;
                timedOut += status == 408 ? 1 : 0;
                busy += status == 429 ? 1 : 0;
            }
            assertEquals(4, timedOut);
            assertEquals(36, ok + busy, "every other request rendered, or was told to come back");
            assertTrue(ok > 0);
        } finally {
            pool.shutdownNow();
        }
    }

    private int openConnections() throws Exception {
        String metrics = f.get("/metrics").body();
        for (String line : metrics.split("\n")) {
            if (line.startsWith("qvm_http_connections ")) {
                return (int) Double.parseDouble(line.substring(line.indexOf(' ') + 1)) - 1; // less the asking one
            }
        }
        throw new AssertionError("no qvm_http_connections");
    }

    // ---- a raw HTTP/1.1 client -----------------------------------------------------------------------

    private Socket socket() throws IOException {
        Socket s = new Socket("127.0.0.1", f.port());
        s.setSoTimeout(15_000);
        return s;
    }

    private static String head(String type, String extra) {
        return "POST /v1/render HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ServerFixture.ALPHA_TOKEN + "\r\n"
                + "Content-Type: " + type + "\r\n" + extra + "\r\n";
    }

    private static void write(Socket s, String text) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(text.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    /** What came back: the status of the first answer, its text, and whether the server then closed. */
    private record Answer(int status, String text, boolean closed) {
    }

    private static Answer read(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        boolean closed = false;
        byte[] buf = new byte[8192];
        try {
            while (true) {
                int n = in.read(buf);
                if (n < 0) {
                    closed = true;
                    break;
                }
                got.write(buf, 0, n);
                String text = got.toString(StandardCharsets.ISO_8859_1);
                int end = text.indexOf("\r\n\r\n");
                if (end > 0 && text.contains("Connection: keep-alive") && complete(text, end)) {
                    break;
                }
            }
        } catch (SocketException reset) {
            closed = true;
        } catch (SocketTimeoutException open) {
            // the answer is what came
        }
        String text = got.toString(StandardCharsets.ISO_8859_1);
        int status = 0;
        if (text.startsWith("HTTP/1.1 ")) {
            status = Integer.parseInt(text.substring(9, 12));
        }
        return new Answer(status, text, closed);
    }

    private static boolean complete(String text, int headEnd) {
        for (String line : text.substring(0, headEnd).split("\r\n")) {
            if (line.regionMatches(true, 0, "Content-Length:", 0, 15)) {
                return text.length() - headEnd - 4 >= Integer.parseInt(line.substring(15).strip());
            }
        }
        return true;
    }
}
