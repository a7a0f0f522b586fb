package io.qvm.worker;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * An HTTP server on 127.0.0.1 that hostile documents point at. It answers every request with
 * something a renderer would happily use (a PNG, CSS, SVG), and records the path: the worker
 * must never make it receive anything.
 */
final class TrapServer implements AutoCloseable {

    private final HttpServer server;
    private final List<String> requests = new CopyOnWriteArrayList<>();

    TrapServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        server.createContext("/", exchange -> {
            requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI());
            byte[] body = "<svg xmlns='http://www.w3.org/2000/svg'/>".getBytes();
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }

    /** {@code http://127.0.0.1:<port>} */
    String base() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    List<String> requests() {
        return List.copyOf(requests);
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
