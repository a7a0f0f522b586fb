package io.qvm.internal.qmp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.internal.qmp.FakeQmpServer.Effect;
import io.qvm.internal.qmp.FakeQmpServer.Reply;
import io.qvm.internal.host.Posix;
import io.qvm.internal.process.QemuUser;
import io.qvm.internal.template.MigrationSocket;
import io.qvm.internal.template.MigrationStream;
import io.qvm.internal.template.TemplateException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
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
 * the stream. A restore's stream reaches QEMU on its stdin ({@code migrate-incoming fd:0}):
 * {@code QemuProcessTest} proves the file arrives whole, {@code MigrationRealQemuTest} that a real
 * QEMU loads it. (In this package because the fake QMP server is package-private.)
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

        MigrationStream.Saved saved = MigrationStream.save(client(), MigrationSocket.inPrivateDirectory(socket), state, true, LONG);

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

        assertEquals(1000, MigrationStream.save(client(), MigrationSocket.inPrivateDirectory(socket), state, false, LONG).bytes());
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
                () -> MigrationStream.save(client(), MigrationSocket.inPrivateDirectory(socket), tmp.resolve("state"), true, LONG));
        assertTrue(e.getMessage().contains("migration failed"), e.getMessage());
        assertTrue(e.getMessage().contains("Unable to write to socket: Broken pipe"), e.getMessage());
        assertFalse(Files.exists(socket));
    }

    @Test
    void aCancelledMigrationIsATemplateException() throws Exception {
        server.enqueue("migrate", Reply.of(qemuSends(stream(100)), Effect.ok("{}")))
                .enqueue("query-migrate", Reply.ok(migrateStatus("cancelled")));
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.save(client(), MigrationSocket.inPrivateDirectory(socket), tmp.resolve("state"), false, LONG));
        assertTrue(e.getMessage().contains("migration cancelled"), e.getMessage());
    }

    @Test
    void aRefusedMigrateCommandIsAQmpError() throws Exception {
        server.enqueue("migrate", Reply.error("GenericError", "There's a migration process in progress"));
        QmpErrorException e = assertThrows(QmpErrorException.class,
                () -> MigrationStream.save(client(), MigrationSocket.inPrivateDirectory(socket), tmp.resolve("state"), false, LONG));
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
                    () -> MigrationStream.save(client(), MigrationSocket.inPrivateDirectory(socket), tmp.resolve("state"), false, Duration.ofMillis(500)));
            assertTrue(e.getMessage().contains("did not end within 500 ms"), e.getMessage());
        } finally {
            release.complete(null);
        }
    }

    // ---- save to a QEMU that dropped to another user -----------------------------------------

    /** This process's own account, standing in for QEMU's user (a test cannot connect as another uid). */
    private QemuUser.Account me() throws IOException {
        Path probe = Files.createTempFile(tmp, "me", "");
        return new QemuUser.Account(System.getProperty("user.name"), Posix.currentUid(),
                (Integer) Files.getAttribute(probe, "unix:gid"));
    }

    @Test
    @Tag("security")
    void aSocketForAnotherUserIsReachableByItsGroupOnlyAndGoneAfterTheSave() throws Exception {
        byte[] bytes = stream(1000);
        QemuUser.Account qemu = me();
        MigrationSocket handover = MigrationSocket.reachableBy(qemu, tmp);
        Path dir = handover.path().getParent();
        List<String> seen = new CopyOnWriteArrayList<>();
        server.enqueue("migrate", Reply.of(Effect.run(cmd -> {
            // what QEMU finds when it connects: a directory its group may enter but not list, a socket it may open
            seen.add(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
            seen.add(PosixFilePermissions.toString(Files.getPosixFilePermissions(socketOf(cmd))));
            seen.add(Files.getAttribute(socketOf(cmd), "unix:gid").toString());
        }), qemuSends(bytes), Effect.ok("{}")))
                .enqueue("query-migrate", Reply.ok(migrateStatus("completed")));
        Path state = tmp.resolve("state");
        assertEquals(1000, MigrationStream.save(client(), handover, state, false, LONG).bytes());
        assertEquals(List.of("rwx--x---", "rw-rw----", Integer.toString(qemu.gid())), seen);
        assertTrue(handover.path().getFileName().toString().matches("[0-9a-f]{32}\\.sock"), handover.path().toString());
        assertFalse(Files.exists(dir), "the hand-over directory is removed");
        assertArrayEquals(bytes, Files.readAllBytes(state));
    }

    @Test
    @Tag("security")
    void aStreamFromAnotherUserThanQemusIsRefused() throws Exception {
        QemuUser.Account someoneElse = new QemuUser.Account("qvm-not-me", 54321, me().gid());
        MigrationSocket handover = MigrationSocket.reachableBy(someoneElse, tmp);
        server.enqueue("migrate", Reply.of(Effect.run(cmd -> {
            Path target = socketOf(cmd);
            background("fake-qemu-of-another-user", () -> {
                try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                    ch.connect(UnixDomainSocketAddress.of(target));
                    ch.write(ByteBuffer.wrap(stream(100)));
                } catch (IOException refused) {
                    // the host hung up on it: that is the point
                }
            });
        }), Effect.ok("{}"))).enqueue("query-migrate", Reply.ok(migrateStatus("completed")));
        Path state = tmp.resolve("state");
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.save(client(), handover, state, false, LONG));
        assertTrue(e.getMessage().contains("not by QEMU's user qvm-not-me"), e.getMessage());
        assertFalse(Files.exists(state), "not a byte of it was kept");
        assertFalse(Files.exists(handover.path().getParent()));
    }

    // ---- restore -----------------------------------------------------------------------------

    @Test
    void restoreHasQemuLoadItsStdinAndReturnsOncePaused() throws Exception {
        server.enqueue("migrate-set-capabilities", Reply.ok("{}"))
                .enqueue("migrate-incoming", Reply.ok("{}"))
                .enqueue("query-status", Reply.ok("{\"status\": \"inmigrate\", \"running\": false}"))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(migrateStatus("completed")));

        Duration took = MigrationStream.restore(client(), true, LONG);

        assertFalse(took.isNegative());
        List<JsonNode> cmds = commands();
        assertEquals(List.of("qmp_capabilities", "migrate-set-capabilities", "migrate-incoming", "query-status",
                "query-status", "query-migrate"), names(cmds));
        assertEquals("fd:0", cmds.get(2).path("arguments").path("uri").asText());
        assertEquals("x-ignore-shared", cmds.get(1).path("arguments").path("capabilities").get(0).path("capability")
                .asText());
    }

    @Test
    void restoreWaitsWhilePausedButTheMigrationIsStillActive() throws Exception {
        server.enqueue("migrate-incoming", Reply.ok("{}"))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(migrateStatus("active")))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(migrateStatus("completed")));
        MigrationStream.restore(client(), false, LONG);
        assertEquals(List.of("qmp_capabilities", "migrate-incoming", "query-status", "query-migrate", "query-status",
                "query-migrate"), names(commands()));
    }

    @Test
    void aStateQemuRefusesIsATemplateException() throws Exception {
        server.enqueue("migrate-incoming", Reply.ok("{}"))
                .enqueue("query-status", Reply.ok("{\"status\": \"paused\", \"running\": false}"))
                .enqueue("query-migrate", Reply.ok(
                        "{\"status\": \"failed\", \"error-desc\": \"load of migration failed: Invalid argument\"}"));
        TemplateException e = assertThrows(TemplateException.class, () -> MigrationStream.restore(client(), false, LONG));
        assertTrue(e.getMessage().contains("QEMU refused the template's state: load of migration failed"),
                e.getMessage());
    }

    @Test
    void aCloneThatRunsAfterTheLoadIsATemplateException() throws Exception {
        server.enqueue("migrate-incoming", Reply.ok("{}"));
        // query-status: the default, "running"
        TemplateException e = assertThrows(TemplateException.class, () -> MigrationStream.restore(client(), false, LONG));
        assertTrue(e.getMessage().contains("the clone is 'running'"), e.getMessage());
    }

    @Test
    void aLoadThatNeverEndsIsATemplateExceptionAtTheTimeout() throws Exception {
        server.enqueue("migrate-incoming", Reply.ok("{}"));
        for (int i = 0; i < 1000; i++) {
            server.enqueue("query-status", Reply.ok("{\"status\": \"inmigrate\", \"running\": false}"));
        }
        TemplateException e = assertThrows(TemplateException.class,
                () -> MigrationStream.restore(client(), false, Duration.ofMillis(300)));
        assertTrue(e.getMessage().contains("did not finish loading the template's state within 300 ms"), e.getMessage());
    }
}
