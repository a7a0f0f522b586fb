package io.qvm.image;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A Debian mirror on loopback for tests: serves a directory ({@code <root>/debian/pool/...},
 * {@code <root>/debian-security/pool/...}) over real HTTP, GET only, 404 for anything else.
 * {@link #replace} makes it serve other bytes for one path (a hostile or broken mirror).
 */
final class LoopbackMirror implements AutoCloseable {
    private final Path root;
    private final HttpServer server;
    private final ExecutorService executor = Executors.newFixedThreadPool(2);
    private final ConcurrentHashMap<String, byte[]> replaced = new ConcurrentHashMap<>();
    private final List<String> requests = new CopyOnWriteArrayList<>();

    LoopbackMirror(Path root) throws IOException {
        this.root = root;
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", ex -> {
            try (ex) {
                String path = ex.getRequestURI().getPath();
                requests.add(path);
                byte[] body = replaced.get(path);
                Path file = root.resolve(path.substring(1)).normalize();
                if (body == null && file.startsWith(root) && Files.isRegularFile(file)
                        && ex.getRequestMethod().equals("GET")) {
                    body = Files.readAllBytes(file);
                }
                if (body == null) {
                    ex.sendResponseHeaders(404, -1);
                    return;
                }
                ex.sendResponseHeaders(200, body.length);
                try (OutputStream out = ex.getResponseBody()) {
                    out.write(body);
                }
            }
        });
        server.setExecutor(executor);
        server.start();
    }

    /** {@code http://127.0.0.1:<port>/<name>}, e.g. name "debian". */
    String url(String name) {
        return "http://" + server.getAddress().getAddress().getHostAddress() + ":"
                + server.getAddress().getPort() + "/" + name;
    }

    /** Places {@code deb} where the mirror {@code name} serves {@code poolPath}. */
    void put(String name, String poolPath, Path deb) throws IOException {
        Path target = root.resolve(name).resolve(poolPath);
        Files.createDirectories(target.getParent());
        Files.copy(deb, target);
    }

    void replace(String urlPath, byte[] body) {
        replaced.put(urlPath, body);
    }

    List<String> requests() {
        return List.copyOf(requests);
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
