package io.qvm.backend.qmp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.backend.qmp.FakeQmpServer.Effect;
import io.qvm.backend.qmp.FakeQmpServer.Reply;
import io.qvm.backend.template.MigrationStream;
import io.qvm.backend.template.TemplateException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link MigrationStream} against {@link FakeQmpServer}, the test playing QEMU's part of the
 * migration on real unix sockets: on {@code migrate} it connects to the URI's socket and writes
 * the stream; on {@code migrate-incoming} it listens there and reads it. (In this package because
 * the fake QMP server is package-private.)
 */
@Tag("unit")
class MigrationStreamTest {

    private static final Duration LONG = Duration.ofSeconds(30);
    private static final int STREAM_BYTES = 3 * (1 << 20) + 17; // more than one 1 MiB receive buffer

    @TempDir
    Path tmp;

    private FakeQmpServer server;
    private QmpClient qmp;
    private Path socket;
    private final List<Thread> qemuThreads = new CopyOnWriteArrayList<>();
    private final List<Throwable> qemuErrors = new CopyOnWriteArrayList<>();

    @BeforeEach
    void connect() throws Exception {
        server = FakeQmpServer.unix(tmp.resolve("qmp.sock"));
        socket = tmp.resolve("migration.sock");
    }

    private QmpClient client() throws Exception {
        qmp = QmpClient.builder(server.socketPath()).connectTimeout(LONG).commandTimeout(LONG).connect();
        return qmp;
    }

    @AfterEach
    void tearDown() throws Exception {
        if (qmp != null) {
            qmp.close();
        }
        server.close();
        for (Thread t : qemuThreads) {
            t.join(30_000);
        }
        assertEquals(List.of(), qemuErrors);
    }

    private static byte[] stream(int n) {
        byte[] b = new byte[n];
        new Random(n).nextBytes(b);
        return b;
    }

    private void background(String name, ThrowingRunnable r) {
        Thread t = new Thread(() -> {
            try {
                r.run();
            } catch (Throwable e) {
                qemuErrors.add(e);
            }
        }, name);
        t.setDaemon(true);
        qemuThreads.add(t);
        t.start();
    }

    @FunctionalInterface
    interface ThrowingRunnable {
        void run() throws Exception;
    }

    private static Path socketOf(JsonNode command) {
        String uri = command.path("arguments").path("uri").asText();
        assertTrue(uri.startsWith("unix:"), uri);
        return Path.of(uri.substring("unix:".length()));
    }

    /** QEMU's {@code migrate}: connect to the host's socket, write the stream, hang up (after replying). */
    private Effect qemuSends(byte[] bytes) {
        return Effect.run(cmd -> {
            Path target = socketOf(cmd);
            background("fake-qemu-migrate", () -> {
                try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                    ch.connect(UnixDomainSocketAddress.of(target));
                    ByteBuffer b = ByteBuffer.wrap(bytes);
                    while (b.hasRemaining()) {
                        ch.write(b);
                    }
                }
            });
        });
    }

    /** QEMU's {@code migrate-incoming}: listen on the URI's socket and read the stream to its end. */
    private Effect qemuReceivesInto(CompletableFuture<byte[]> got) {
        return Effect.run(cmd -> {
            Path path = socketOf(cmd);
            ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            listener.bind(UnixDomainSocketAddress.of(path));
            background("fake-qemu-incoming", () -> {
                try (listener; SocketChannel ch = listener.accept()) {
                    ByteArrayOutputStream all = new ByteArrayOutputStream();
                    ByteBuffer b = ByteBuffer.allocate(64 * 1024);
                    while (ch.read(b.clear()) >= 0) {
                        all.write(b.array(), 0, b.position());
                    }
                    got.complete(all.toByteArray());
                } finally {
                    Files.deleteIfExists(path);
                }
            });
        });
    }

    private static String migrateStatus(String status) {
        return "{\"status\": \"" + status + "\"}";
    }

    private List<JsonNode> commands() throws InterruptedException {
        List<JsonNode> out = new ArrayList<>();
        JsonNode c;
        while ((c = server.takeCommand(Duration.ofMillis(200))) != null) {
            out.add(c);
        }
        return out;
    }

    private static List<String> names(List<JsonNode> commands) {
        return commands.stream().map(c -> c.path("execute").asText()).toList();
    }

    // ---- save ----------------------------------------------------------------------------------

    @Test
    void saveWritesTheStreamQemuSendsAndWaitsForCompleted() throws Exception {
        byte[] bytes = stream(STREAM_BYTES);
        server.enqueue("migrate-set-capabilities", Reply.ok("{}"))
                .enqueue("migrate", Reply.of(qemuSends(bytes), Effect.ok("{}")))
                .enqueue("query-migrate", Reply.ok(migrateStatus("active")))
                .enqueue("query-migrate", Reply.ok(migrateStatus("completed")));
        Path state = tmp.resolve("state");

        MigrationStream.Saved saved = MigrationStream.save(client(), socket, state, true, LONG);

        assertEquals(STREAM_BYTES, saved.bytes());
        assertArrayEquals(bytes, Files.readAllBytes(state));
        assertFalse(saved.took().isNegative());
        assertFalse(Files.exists(socket), "the migration socket is removed");
        List<JsonNode> cmds = commands();
        assertEquals(List.of("qmp_capabilities", "stop", "migrate-set-capabilities", "migrate", "query-migrate",
                "query-migrate"), names(cmds));
        JsonNode cap = cmds.get(2).path("arguments").path("capabilities").get(0);
        assertEquals("x-ignore-shared", cap.path("capability").asText());
        assertTrue(cap.path("state").asBoolean());
        assertEquals("unix:" + socket, cmds.get(3).path("arguments").path("uri").asText());
    }

    @Test
    void saveOfTheWholeRamSetsNoCapability() throws Exception {
        byte[] bytes = stream(1000);
        server.enqueue("migrate", Reply.of(qemuSends(bytes), Effect.ok("{}")))
                .enqueue("query-migrate", Reply.ok(migrateStatus("completed")));
        Path state = tmp.resolve("state");
        Files.write(state, new byte[5000]); // an older, longer file is replaced, not overwritten in part

        assertEquals(1000, MigrationStream.save(client(), socket, state, false, LONG).bytes());
        assertArrayEquals(bytes, Files.readAllBytes(state));
        assertEquals(List.of("qmp_capabilities", "stop", "migrate", "query-migrate"), names(commands()));
    }

    @Test
    void aFailedMigrationIsATemplateException() throws Exception {
        server.enqueue("migrate-set-capabilities", Reply.ok("{}"))
                .enqueue("migrate", Reply.of(qemuSends(stream(100)), Effect.ok("{}")))
                .enqueue("query-migrate", Reply.ok(
                        "{\"status\": \"failed\", \"error-desc\": \"Unable to write to socket: Broken pipe\"}"));
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.save(client(), socket, tmp.resolve("state"), true, LONG));
        assertTrue(e.getMessage().contains("migration failed"), e.getMessage());
        assertTrue(e.getMessage().contains("Unable to write to socket: Broken pipe"), e.getMessage());
        assertFalse(Files.exists(socket));
    }

    @Test
    void aCancelledMigrationIsATemplateException() throws Exception {
        server.enqueue("migrate", Reply.of(qemuSends(stream(100)), Effect.ok("{}")))
                .enqueue("query-migrate", Reply.ok(migrateStatus("cancelled")));
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.save(client(), socket, tmp.resolve("state"), false, LONG));
        assertTrue(e.getMessage().contains("migration cancelled"), e.getMessage());
    }

    @Test
    void aRefusedMigrateCommandIsAQmpError() throws Exception {
        server.enqueue("migrate", Reply.error("GenericError", "There's a migration process in progress"));
        QmpErrorException e = assertThrows(QmpErrorException.class,
                () -> MigrationStream.save(client(), socket, tmp.resolve("state"), false, LONG));
        assertEquals("migrate", e.command());
        assertFalse(Files.exists(socket), "the migration socket is removed");
    }

    @Test
    void aStreamThatNeverEndsIsATemplateExceptionAtTheTimeout() throws Exception {
        CompletableFuture<Void> release = new CompletableFuture<>();
        server.enqueue("migrate", Reply.of(Effect.run(cmd -> {
            Path target = socketOf(cmd);
            background("fake-qemu-stuck", () -> {
                try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                    ch.connect(UnixDomainSocketAddress.of(target));
                    ch.write(ByteBuffer.wrap(new byte[10]));
                    release.get(30, TimeUnit.SECONDS); // keeps the stream open
                }
            });
        }), Effect.ok("{}")));
        try {
            TemplateException e = assertThrows(TemplateException.class,
                    () -> MigrationStream.save(client(), socket, tmp.resolve("state"), false, Duration.ofMillis(500)));
            assertTrue(e.getMessage().contains("did not end within 500 ms"), e.getMessage());
        } finally {
            release.complete(null);
        }
    }

    // ---- restore -----------------------------------------------------------------------------

    @Test
    void restoreStreamsTheFileToQemuAndReturnsOncePaused() throws Exception {
        byte[] bytes = stream(STREAM_BYTES);
        Path state = tmp.resolve("state");
        Files.write(state, bytes);
        CompletableFuture<byte[]> got = new CompletableFuture<>();
        server.enqueue("migrate-set-capabilities", Reply.ok("{}"))
                .enqueue("migrate-incoming", Reply.of(qemuReceivesInto(got), Effect.ok("{}")))
                .enqueue("query-status", Reply.ok("{\"status\": \"inmigrate\", \"running\": false}"))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(migrateStatus("completed")));

        Duration took = MigrationStream.restore(client(), socket, state, true, LONG);

        assertFalse(took.isNegative());
        assertArrayEquals(bytes, got.get(30, TimeUnit.SECONDS));
        List<JsonNode> cmds = commands();
        assertEquals(List.of("qmp_capabilities", "migrate-set-capabilities", "migrate-incoming", "query-status",
                "query-status", "query-migrate"), names(cmds));
        assertEquals("unix:" + socket, cmds.get(2).path("arguments").path("uri").asText());
    }

    @Test
    void restoreWaitsWhilePausedButTheMigrationIsStillActive() throws Exception {
        Path state = tmp.resolve("state");
        Files.write(state, stream(100));
        CompletableFuture<byte[]> got = new CompletableFuture<>();
        server.enqueue("migrate-incoming", Reply.of(qemuReceivesInto(got), Effect.ok("{}")))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(migrateStatus("active")))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(migrateStatus("completed")));
        MigrationStream.restore(client(), socket, state, false, LONG);
        assertEquals(List.of("qmp_capabilities", "migrate-incoming", "query-status", "query-migrate", "query-status",
                "query-migrate"), names(commands()));
    }

    @Test
    void aStateQemuRefusesIsATemplateException() throws Exception {
        Path state = tmp.resolve("state");
        Files.write(state, stream(100));
        CompletableFuture<byte[]> got = new CompletableFuture<>();
        server.enqueue("migrate-incoming", Reply.of(qemuReceivesInto(got), Effect.ok("{}")))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(
                        "{\"status\": \"failed\", \"error-desc\": \"load of migration failed: Invalid argument\"}"));
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.restore(client(), socket, state, false, LONG));
        assertTrue(e.getMessage().contains("QEMU refused the template's state: load of migration failed"),
                e.getMessage());
    }

    @Test
    void aCloneThatRunsAfterTheLoadIsATemplateException() throws Exception {
        Path state = tmp.resolve("state");
        Files.write(state, stream(100));
        CompletableFuture<byte[]> got = new CompletableFuture<>();
        server.enqueue("migrate-incoming", Reply.of(qemuReceivesInto(got), Effect.ok("{}")));
        // query-status: the default, "running"
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.restore(client(), socket, state, false, LONG));
        assertTrue(e.getMessage().contains("the clone is 'running'"), e.getMessage());
    }

    @Test
    void aQemuThatNeverListensIsATemplateExceptionAtTheTimeout() throws Exception {
        Path state = tmp.resolve("state");
        Files.write(state, stream(100));
        server.enqueue("migrate-incoming", Reply.ok("{}")); // but nobody listens on the socket
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.restore(client(), socket, state, false, Duration.ofMillis(300)));
        assertTrue(e.getMessage().contains("did not listen for the template's state"), e.getMessage());
    }
}
