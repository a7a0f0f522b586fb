package io.qvm.internal.image;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A remote Maven repository on loopback, the way a repository manager speaks to Maven's deploy
 * and to a download: {@code PUT} writes the request body to {@code <root>/<path>} (a temporary
 * file renamed into place, so a broken upload leaves nothing), {@code GET}/{@code HEAD} serve the
 * file or {@code 404}. With credentials set, every {@code PUT} (and with
 * {@link #requireAuthForReads}, every read) needs HTTP Basic with exactly them, else {@code 401}
 * with a {@code WWW-Authenticate} challenge. Faults are data: a status for every request whose
 * path ends with a suffix, or a download cut off after so many bytes. Every request is recorded
 * ({@code "PUT /io/qvm/… 201"}) with the {@code Authorization} header's user, never its password.
 */
public final class LoopbackMavenRepository implements AutoCloseable {

    private final HttpServer server;
    private final ExecutorService executor = Executors.newFixedThreadPool(4);
    private final Path root;
    private final List<String> log = java.util.Collections.synchronizedList(new ArrayList<>());
    private final Map<String, Integer> failures = new ConcurrentHashMap<>();
    private volatile String user;
    private volatile String password;
    private volatile boolean authForReads;
    private volatile long cutOffAfter = -1;

    public LoopbackMavenRepository(Path root) throws IOException {
        this.root = Files.createDirectories(root).toAbsolutePath();
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        server.createContext("/", this::handle);
        server.setExecutor(executor);
        server.start();
    }

    /** {@code http://127.0.0.1:<port>/repo/}: the repository's base URL. */
    public URI url() {
        return URI.create("http://" + server.getAddress().getAddress().getHostAddress() + ":"
                + server.getAddress().getPort() + "/repo/");
    }

    /** Where the uploaded files land ({@code <root>/io/qvm/…}). */
    public Path root() {
        return root;
    }

    /** Requires HTTP Basic with these credentials for every PUT. */
    public LoopbackMavenRepository credentials(String user, String password) {
        this.user = user;
        this.password = password;
        return this;
    }

    /** Requires the credentials for reads too. */
    public LoopbackMavenRepository requireAuthForReads() {
        this.authForReads = true;
        return this;
    }

    /** Answers {@code status} to every request whose path ends with {@code suffix}. */
    public LoopbackMavenRepository fail(String suffix, int status) {
        failures.put(suffix, status);
        return this;
    }

    /** Downloads promise their whole length but the connection closes after {@code bytes}. */
    public LoopbackMavenRepository cutOffAfter(long bytes) {
        this.cutOffAfter = bytes;
        return this;
    }

    /** Every request so far, in order: {@code "<METHOD> <path> <status> [user]"}. */
    public List<String> requests() {
        synchronized (log) {
            return List.copyOf(log);
        }
    }

    private void handle(HttpExchange x) throws IOException {
        try (x) {
            String method = x.getRequestMethod();
            String path = x.getRequestURI().getPath();
            String who = user(x).orElse("-");
            int status = answer(x, method, path);
            log.add(method + " " + path + " " + status + " " + who);
        }
    }

    private int answer(HttpExchange x, String method, String path) throws IOException {
        if (!path.startsWith("/repo/") || path.contains("..") || path.contains("//")) {
            return empty(x, 400);
        }
        Path file = root.resolve(path.substring("/repo/".length()));
        boolean write = method.equals("PUT");
        if (user != null && (write || authForReads) && !authorized(x)) {
            x.getResponseHeaders().add("WWW-Authenticate", "Basic realm=\"loopback\"");
            x.getRequestBody().readAllBytes();
            return empty(x, 401);
        }
        for (Map.Entry<String, Integer> f : failures.entrySet()) {
            if (path.endsWith(f.getKey())) {
                x.getRequestBody().readAllBytes();
                return empty(x, f.getValue());
            }
        }
        switch (method) {
            case "PUT" -> {
                Files.createDirectories(file.getParent());
                Path part = Files.createTempFile(file.getParent(), ".upload-", ".part");
                try {
                    try (InputStream in = x.getRequestBody()) {
                        Files.copy(in, part, StandardCopyOption.REPLACE_EXISTING);
                    }
                    Files.move(part, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                } finally {
                    Files.deleteIfExists(part);
                }
                return empty(x, 201);
            }
            case "GET", "HEAD" -> {
                if (!Files.isRegularFile(file)) {
                    return empty(x, 404);
                }
                byte[] bytes = Files.readAllBytes(file);
                if (method.equals("HEAD")) {
                    x.getResponseHeaders().add("Content-Length", Long.toString(bytes.length));
                    x.sendResponseHeaders(200, -1);
                    return 200;
                }
                x.sendResponseHeaders(200, bytes.length);
                OutputStream out = x.getResponseBody();
                if (cutOffAfter >= 0 && cutOffAfter < bytes.length) {
                    out.write(bytes, 0, (int) cutOffAfter);
                    out.flush();
                    // the exchange is closed below, short of the length it promised
                    return -200;
                }
                out.write(bytes);
                return 200;
            }
            default -> {
                return empty(x, 405);
            }
        }
    }

    private boolean authorized(HttpExchange x) {
        String h = x.getRequestHeaders().getFirst("Authorization");
        String expected = "Basic " + Base64.getEncoder().encodeToString((user + ":" + password)
                .getBytes(StandardCharsets.UTF_8));
        return expected.equals(h);
    }

    private static Optional<String> user(HttpExchange x) {
        String h = x.getRequestHeaders().getFirst("Authorization");
        if (h == null || !h.startsWith("Basic ")) {
            return Optional.empty();
        }
        try {
            String s = new String(Base64.getDecoder().decode(h.substring(6)), StandardCharsets.UTF_8);
            int colon = s.indexOf(':');
            return Optional.of(colon < 0 ? s : s.substring(0, colon));
        } catch (IllegalArgumentException e) {
            return Optional.of("(malformed)");
        }
    }

    private static int empty(HttpExchange x, int status) throws IOException {
        x.sendResponseHeaders(status, -1);
        return status;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
