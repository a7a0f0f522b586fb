package io.qvm.internal.qmp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A QMP server on a real socket (AF_UNIX, or TCP on loopback) that speaks enough of QEMU's
 * protocol to test {@link QmpClient}, with replies and faults described as data — in the manner
 * of OkHttp's MockWebServer.
 *
 * <pre>{@code
 * server.beforeGreeting(FakeQmpServer.event("RESUME", "{}"));       // early event
 * server.enqueue("query-status", Reply.of(Effect.line("not json")));  // garbage instead of a reply
 * server.enqueue("query-status", Reply.never());                      // a reply that never comes
 * server.enqueue("quit", Reply.of(Effect.ok("{}"), Effect.close()));   // EOF after quit
 * server.enqueue("migrate", Reply.of(Effect.run(cmd -> ...), Effect.ok("{}")));  // play QEMU's part
 * }</pre>
 *
 * Commands with nothing enqueued get QEMU's defaults: {@code qmp_capabilities} and
 * {@code system_powerdown}/{@code stop}/{@code cont} return {@code {}}, {@code query-status}
 * returns running, {@code quit} replies and hangs up, anything else is {@code CommandNotFound}.
 * Every received command is recorded for {@link #takeCommand(Duration)}. One client at a time.
 */
final class FakeQmpServer implements AutoCloseable {

    static final String DEFAULT_GREETING =
            "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, "
                    + "\"package\": \"fake\"}, \"capabilities\": [\"oob\"]}}";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** One thing the server does on the wire. */
    sealed interface Effect {
        /** {@code {"return": <json>, "id": <the command's id>}}. */
        record Ok(String returnJson) implements Effect {}

        /** {@code {"id": ..., "error": {"class": ..., "desc": ...}}}. */
        record Error(String errorClass, String desc) implements Effect {}

        /** A raw line, written as given plus {@code \r\n} (events, garbage). */
        record Line(String raw) implements Effect {}

        /** {@code size} bytes of {@code x} with no line end until the end. */
        record Oversized(int size) implements Effect {}

        /** Close the connection (EOF for the client). */
        record Close() implements Effect {}

        /** Wait before the next effect. */
        record Pause(Duration duration) implements Effect {}

        /** Run test code with the command (the test plays QEMU's side effects, e.g. a migration). */
        record Run(Action action) implements Effect {}

        /** What {@link Run} runs. */
        @FunctionalInterface
        interface Action {
            void run(JsonNode command) throws Exception;
        }

        static Effect ok(String returnJson) {
            return new Ok(returnJson);
        }

        static Effect error(String errorClass, String desc) {
            return new Error(errorClass, desc);
        }

        static Effect line(String raw) {
            return new Line(raw);
        }

        static Effect oversized(int size) {
            return new Oversized(size);
        }

        static Effect close() {
            return new Close();
        }

        static Effect pause(Duration d) {
            return new Pause(d);
        }

        static Effect run(Action action) {
            return new Run(action);
        }
    }

    /** What the server does when it receives one command. */
    record Reply(List<Effect> effects) {
        static Reply of(Effect... effects) {
            return new Reply(List.of(effects));
        }

        static Reply ok(String returnJson) {
            return of(Effect.ok(returnJson));
        }

        static Reply error(String errorClass, String desc) {
            return of(Effect.error(errorClass, desc));
        }

        /** Swallow the command: the reply never comes. */
        static Reply never() {
            return of();
        }
    }

    private final ServerSocketChannel server;
    private final SocketAddress address;
    private final Path socketPath;
    private volatile String greeting = DEFAULT_GREETING;
    private final List<String> beforeGreeting = new ArrayList<>();
    private final List<String> afterGreeting = new ArrayList<>();
    private final Map<String, Deque<Reply>> script = new HashMap<>();
    private final BlockingQueue<JsonNode> received = new LinkedBlockingQueue<>();
    private final Thread acceptor;
    private volatile SocketChannel current;
    private volatile boolean closed;

    private FakeQmpServer(ServerSocketChannel server, SocketAddress address, Path socketPath) {
        this.server = server;
        this.address = address;
        this.socketPath = socketPath;
        this.acceptor = new Thread(this::acceptLoop, "fake-qmp-server " + address);
        this.acceptor.setDaemon(true);
    }

    /** Binds an AF_UNIX server at {@code socket} and starts accepting. */
    static FakeQmpServer unix(Path socket) throws IOException {
        ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        s.bind(UnixDomainSocketAddress.of(socket));
        FakeQmpServer f = new FakeQmpServer(s, UnixDomainSocketAddress.of(socket), socket);
        f.acceptor.start();
        return f;
    }

    /** Binds a TCP server on a free loopback port and starts accepting. */
    static FakeQmpServer tcp() throws IOException {
        ServerSocketChannel s = ServerSocketChannel.open();
        s.bind(new InetSocketAddress("127.0.0.1", 0));
        FakeQmpServer f = new FakeQmpServer(s, s.getLocalAddress(), null);
        f.acceptor.start();
        return f;
    }

    /** A QMP event line. */
    static String event(String name, String dataJson) {
        return "{\"timestamp\": {\"seconds\": 1796069093, \"microseconds\": 834651}, \"event\": \"" + name
                + "\", \"data\": " + dataJson + "}";
    }

    SocketAddress address() {
        return address;
    }

    Path socketPath() {
        return socketPath;
    }

    /** Replaces the greeting line (before a client connects). */
    FakeQmpServer greeting(String rawLine) {
        this.greeting = rawLine;
        return this;
    }

    /** Lines sent before the greeting (QEMU never does this; the client must cope). */
    synchronized FakeQmpServer beforeGreeting(String... rawLines) {
        beforeGreeting.addAll(Arrays.asList(rawLines));
        return this;
    }

    /** Lines sent right after the greeting, before the client's qmp_capabilities is answered. */
    synchronized FakeQmpServer afterGreeting(String... rawLines) {
        afterGreeting.addAll(Arrays.asList(rawLines));
        return this;
    }

    /** The next {@code command} gets {@code reply}; several enqueued replies are used in order. */
    synchronized FakeQmpServer enqueue(String command, Reply reply) {
        script.computeIfAbsent(command, k -> new ArrayDeque<>()).add(reply);
        return this;
    }

    /** The next command the client sent, or {@code null} if none within {@code timeout}. */
    JsonNode takeCommand(Duration timeout) throws InterruptedException {
        return received.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Sends a raw line to the connected client now (e.g. an event). */
    void send(String rawLine) throws IOException {
        SocketChannel ch = current;
        if (ch == null) {
            throw new IllegalStateException("no client connected");
        }
        writeLine(ch, rawLine);
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        SocketChannel ch = current;
        if (ch != null) {
            ch.close();
        }
        if (socketPath != null) {
            Files.deleteIfExists(socketPath);
        }
    }

    private void acceptLoop() {
        while (!closed) {
            try (SocketChannel ch = server.accept()) {
                current = ch;
                serve(ch);
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            } finally {
                current = null;
            }
        }
    }

    private void serve(SocketChannel ch) throws IOException {
        List<String> early;
        List<String> late;
        synchronized (this) {
            early = new ArrayList<>(beforeGreeting);
            late = new ArrayList<>(afterGreeting);
        }
        for (String l : early) {
            writeLine(ch, l);
        }
        writeLine(ch, greeting);
        for (String l : late) {
            writeLine(ch, l);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode cmd = MAPPER.readTree(line);
            received.add(cmd);
            if (!run(ch, cmd)) {
                return;
            }
        }
    }

    /** Runs the reply for one command; false once the connection was closed by the script. */
    private boolean run(SocketChannel ch, JsonNode cmd) throws IOException {
        String name = cmd.path("execute").asText();
        Reply reply;
        synchronized (this) {
            Deque<Reply> q = script.get(name);
            reply = q == null || q.isEmpty() ? null : q.poll();
        }
        if (reply == null) {
            reply = defaultReply(name);
        }
        for (Effect e : reply.effects()) {
            if (e instanceof Effect.Ok ok) {
                ObjectNode m = MAPPER.createObjectNode();
                m.set("return", MAPPER.readTree(ok.returnJson()));
                copyId(cmd, m);
                writeLine(ch, MAPPER.writeValueAsString(m));
            } else if (e instanceof Effect.Error err) {
                ObjectNode m = MAPPER.createObjectNode();
                copyId(cmd, m);
                m.putObject("error").put("class", err.errorClass()).put("desc", err.desc());
                writeLine(ch, MAPPER.writeValueAsString(m));
            } else if (e instanceof Effect.Line l) {
                writeLine(ch, l.raw());
            } else if (e instanceof Effect.Oversized o) {
                byte[] big = new byte[o.size()];
                Arrays.fill(big, (byte) 'x');
                big[0] = '"';
                write(ch, ByteBuffer.wrap(big));
            } else if (e instanceof Effect.Close) {
                ch.close();
                return false;
            } else if (e instanceof Effect.Run r) {
                try {
                    r.action().run(cmd);
                } catch (IOException | RuntimeException ex) {
                    throw ex;
                } catch (Exception ex) {
                    throw new IOException(ex);
                }
            } else if (e instanceof Effect.Pause p) {
                try {
                    Thread.sleep(p.duration().toMillis());
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
        return true;
    }

    private static Reply defaultReply(String command) {
        switch (command) {
            case "qmp_capabilities":
            case "system_powerdown":
            case "stop":
            case "cont":
                return Reply.ok("{}");
            case "query-status":
                return Reply.ok("{\"status\": \"running\", \"singlestep\": false, \"running\": true}");
            case "quit":
                return Reply.of(Effect.ok("{}"), Effect.close());
            default:
                return Reply.error("CommandNotFound", "The command " + command + " has not been found");
        }
    }

    private static void copyId(JsonNode cmd, ObjectNode m) {
        if (cmd.has("id")) {
            m.set("id", cmd.get("id"));
        }
    }

    private static void writeLine(SocketChannel ch, String line) throws IOException {
        write(ch, ByteBuffer.wrap((line + "\r\n").getBytes(StandardCharsets.UTF_8)));
    }

    private static void write(SocketChannel ch, ByteBuffer buf) throws IOException {
        synchronized (ch) {
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
        }
    }
}
