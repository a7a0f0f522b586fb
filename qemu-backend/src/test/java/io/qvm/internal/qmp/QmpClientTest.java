package io.qvm.internal.qmp;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.internal.qmp.FakeQmpServer.Effect;
import io.qvm.internal.qmp.FakeQmpServer.Reply;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class QmpClientTest {

    private static final Duration LONG = Duration.ofSeconds(30);

    @TempDir
    Path tmp;

    private FakeQmpServer server;
    private QmpClient client;
    private final List<QmpEvent> events = new CopyOnWriteArrayList<>();

    @BeforeEach
    void startServer() throws Exception {
        server = FakeQmpServer.unix(tmp.resolve("qmp.sock"));
    }

    @AfterEach
    void tearDown() throws Exception {
        if (client != null) {
            client.close();
        }
        server.close();
    }

    private QmpClient connect() throws Exception {
        client = QmpClient.builder(server.socketPath())
                .connectTimeout(LONG)
                .commandTimeout(LONG)
                .eventListener(events::add)
                .connect();
        return client;
    }

    @Test
    void readsGreetingAndNegotiatesCapabilitiesFirst() throws Exception {
        connect();
        assertEquals("7.2.22", client.greeting().version());
        assertEquals(List.of("oob"), client.greeting().capabilities());
        assertTrue(client.greeting().isAtLeast(7, 0));
        JsonNode first = server.takeCommand(LONG);
        assertEquals("qmp_capabilities", first.path("execute").asText());
        assertTrue(first.path("id").isTextual(), "commands carry an id: " + first);
        assertFalse(first.has("arguments"), "no capabilities are enabled: " + first);
    }

    @Test
    void queryStatusIsTyped() throws Exception {
        connect();
        QmpStatus status = client.queryStatus();
        assertEquals(QmpStatus.RUNNING, status.status());
        assertTrue(status.running());
    }

    @Test
    void errorReplyCarriesTheErrorClass() throws Exception {
        server.enqueue("device_del", Reply.error("DeviceNotFound", "Device 'x' not found"));
        connect();
        var args = QmpClient.MAPPER.createObjectNode().put("id", "x");
        QmpErrorException e = assertThrows(QmpErrorException.class, () -> client.execute("device_del", args, LONG));
        assertEquals("DeviceNotFound", e.errorClass());
        assertEquals("device_del", e.command());
        assertEquals("Device 'x' not found", e.description());
        server.takeCommand(LONG); // qmp_capabilities
        assertEquals("x", server.takeCommand(LONG).path("arguments").path("id").asText());
        assertTrue(client.isOpen(), "an error reply does not hurt the connection");
        assertTrue(client.queryStatus().running());
    }

    @Test
    void unknownCommandIsCommandNotFound() throws Exception {
        connect();
        QmpErrorException e = assertThrows(QmpErrorException.class, () -> client.execute("no-such-command"));
        assertEquals(QmpErrorException.COMMAND_NOT_FOUND, e.errorClass());
    }

    @Test
    void earlyEventsReachListenersRegisteredOnTheBuilder() throws Exception {
        server.beforeGreeting(FakeQmpServer.event("RESUME", "{}"))
                .afterGreeting(FakeQmpServer.event("STOP", "{}"));
        connect();
        assertEquals(List.of("RESUME", "STOP"), events.stream().map(QmpEvent::name).toList());
    }

    @Test
    void typedEventsToleratingUnknownFields() throws Exception {
        connect();
        server.send("{\"timestamp\": {\"seconds\": 100, \"microseconds\": 5}, \"event\": \"SHUTDOWN\", "
                + "\"data\": {\"guest\": true, \"reason\": \"guest-panic\", \"future-field\": [1]}, \"extra\": 1}");
        server.send(FakeQmpServer.event("GUEST_PANICKED", "{\"action\": \"poweroff\", \"info\": {\"type\": \"hyper-v\"}}"));
        server.send(FakeQmpServer.event("VSERPORT_CHANGE", "{\"id\": \"qvmw0\", \"open\": true}"));
        server.send(FakeQmpServer.event("SHUTDOWN", "{\"guest\": false, \"reason\": \"some-future-reason\"}"));
        server.send("{\"event\": \"RESUME\", \"timestamp\": {\"seconds\": -1, \"microseconds\": -1}}");
        await().atMost(LONG).until(() -> events.size() == 5);

        QmpEvent.Shutdown panic = events.get(0).shutdown().orElseThrow();
        assertTrue(panic.guest());
        assertEquals(QmpEvent.ShutdownCause.GUEST_PANIC, panic.cause());
        assertEquals(Instant.ofEpochSecond(100, 5000), events.get(0).timestamp());
        assertEquals("poweroff", events.get(1).guestPanicked().orElseThrow().action());
        assertEquals(new QmpEvent.VserportChange("qvmw0", true), events.get(2).vserportChange().orElseThrow());
        QmpEvent.Shutdown unknown = events.get(3).shutdown().orElseThrow();
        assertEquals(QmpEvent.ShutdownCause.UNKNOWN, unknown.cause());
        assertEquals("some-future-reason", unknown.reason());
        assertTrue(events.get(4).isResume());
        assertNull(events.get(4).timestamp(), "QEMU's -1 timestamp means none");
        assertTrue(events.get(4).data().isObject());
        assertTrue(events.get(4).shutdown().isEmpty());
    }

    /**
     * A timestamp that is no instant — past {@link Instant#MAX} (found by {@code QmpReaderFuzzTest}:
     * it ended the reader thread with a DateTimeException and closed the connection), above a long,
     * or with microseconds that are not a number — reads as no timestamp; the event arrives and the
     * connection stays open.
     */
    @Test
    void anEventWithAnImpossibleTimestampHasNone() throws Exception {
        connect();
        server.send("{\"timestamp\": {\"seconds\": 179606901796069093, \"microseconds\": 1}, \"event\": \"STOP\"}");
        server.send("{\"timestamp\": {\"seconds\": 18446744073709551621, \"microseconds\": 1}, \"event\": \"STOP\"}");
        server.send("{\"timestamp\": {\"seconds\": 5, \"microseconds\": \"7\"}, \"event\": \"STOP\"}");
        server.send("{\"timestamp\": {\"seconds\": 5}, \"event\": \"RESUME\"}");
        await().atMost(LONG).until(() -> events.size() == 4);
        assertNull(events.get(0).timestamp());
        assertNull(events.get(1).timestamp(), "2^64 + 5 is not 5 seconds");
        assertNull(events.get(2).timestamp());
        assertEquals(Instant.ofEpochSecond(5), events.get(3).timestamp(), "no microseconds: 0");
        assertTrue(client.isOpen());
    }

    @Test
    void repliesWithUnknownFieldsAndStrayMessagesAreTolerated() throws Exception {
        server.enqueue("query-status", Reply.of(
                Effect.line("{\"something-new\": 1}"),
                Effect.line("{\"return\": {}, \"id\": \"not-ours\"}"),
                Effect.line(""),
                Effect.ok("{\"status\": \"paused\", \"running\": false, \"new-field\": {}}")));
        connect();
        assertEquals(new QmpStatus("paused", false), client.queryStatus());
        assertTrue(client.isOpen());
    }

    @Test
    void garbageLineFailsPendingCommandsAndClosesTheConnection() throws Exception {
        server.enqueue("query-status", Reply.of(Effect.line("this is \u001b[31mnot json")));
        connect();
        QmpProtocolException e = assertThrows(QmpProtocolException.class, () -> client.queryStatus());
        assertTrue(e.excerpt().contains("\\x1b"), "control characters are escaped: " + e.excerpt());
        QmpConnectionClosedException reason = client.whenClosed().get();
        assertEquals(QmpConnectionClosedException.Origin.PROTOCOL_ERROR, reason.origin());
        QmpConnectionClosedException later = assertThrows(QmpConnectionClosedException.class, () -> client.queryStatus());
        assertEquals(QmpConnectionClosedException.Origin.PROTOCOL_ERROR, later.origin());
    }

    @Test
    void jsonThatIsNotAnObjectIsAProtocolError() throws Exception {
        server.enqueue("query-status", Reply.of(Effect.line("[1, 2, 3]")));
        connect();
        assertThrows(QmpProtocolException.class, () -> client.queryStatus());
        assertFalse(client.isOpen());
    }

    @Test
    void oversizedLineIsAProtocolErrorAtTheConfiguredLimit() throws Exception {
        server.enqueue("query-status", Reply.of(Effect.oversized(100_000)));
        client = QmpClient.builder(server.socketPath()).connectTimeout(LONG).maxLineBytes(4096).connect();
        QmpProtocolException e = assertThrows(QmpProtocolException.class, () -> client.execute("query-status"));
        assertTrue(e.getMessage().contains("4096"), e.getMessage());
        assertFalse(client.isOpen());
    }

    @Test
    void defaultLimitIsOneMebibyte() throws Exception {
        server.enqueue("query-status", Reply.of(Effect.oversized(QmpClient.DEFAULT_MAX_LINE_BYTES + 1)));
        connect();
        assertThrows(QmpProtocolException.class, () -> client.queryStatus());
    }

    @Test
    void lineJustUnderTheLimitIsAccepted() throws Exception {
        String filler = "y".repeat(4000);
        server.enqueue("query-status", Reply.ok("{\"status\": \"running\", \"running\": true, \"pad\": \"" + filler + "\"}"));
        client = QmpClient.builder(server.socketPath()).connectTimeout(LONG).maxLineBytes(4096).connect();
        assertTrue(client.queryStatus().running());
    }

    @Test
    void replyThatNeverComesTimesOutAndTheConnectionSurvives() throws Exception {
        server.enqueue("query-status", Reply.never());
        connect();
        QmpTimeoutException e = assertThrows(QmpTimeoutException.class,
                () -> client.execute("query-status", null, Duration.ofMillis(200)));
        assertEquals("query-status", e.command());
        assertTrue(client.isOpen());
        assertTrue(client.queryStatus().running());
    }

    @Test
    void lateReplyToATimedOutCommandIsDropped() throws Exception {
        server.enqueue("query-status", Reply.of(Effect.pause(Duration.ofSeconds(2)),
                Effect.ok("{\"status\": \"late\", \"running\": false}")));
        connect();
        assertThrows(QmpTimeoutException.class, () -> client.execute("query-status", null, Duration.ofMillis(100)));
        assertEquals(QmpStatus.RUNNING, client.queryStatus().status(), "the late reply is not taken for the next one");
    }

    @Test
    void eofFailsEveryPendingCommandAtOnce() throws Exception {
        server.enqueue("query-status", Reply.never());
        server.enqueue("query-status", Reply.never());
        server.enqueue("stop", Reply.of(Effect.close()));
        connect();
        CompletableFuture<JsonNode> a = client.executeAsync("query-status", null, LONG);
        CompletableFuture<JsonNode> b = client.executeAsync("query-status", null, LONG);
        CompletableFuture<JsonNode> c = client.executeAsync("stop", null, LONG);
        for (CompletableFuture<JsonNode> f : List.of(a, b, c)) {
            ExecutionException e = assertThrows(ExecutionException.class, f::get);
            QmpConnectionClosedException closed = assertInstanceOf(QmpConnectionClosedException.class, e.getCause());
            assertTrue(closed.closedByPeer());
        }
        assertEquals(QmpConnectionClosedException.Origin.PEER_EOF, client.whenClosed().get().origin());
    }

    @Test
    void quitReturnsNormallyWhenQemuRepliesThenHangsUp() throws Exception {
        connect();
        client.quit(LONG);
        assertTrue(client.awaitClosed(LONG));
        assertTrue(client.whenClosed().get().closedByPeer());
    }

    @Test
    void quitReturnsNormallyWhenQemuHangsUpBeforeReplying() throws Exception {
        server.enqueue("quit", Reply.of(Effect.close()));
        connect();
        client.quit(LONG);
        assertFalse(client.isOpen());
    }

    @Test
    void quitAfterQemuAlreadyHungUpReturnsNormally() throws Exception {
        server.enqueue("stop", Reply.of(Effect.close()));
        connect();
        assertThrows(QmpConnectionClosedException.class, () -> client.stop());
        client.quit(LONG);
    }

    @Test
    void quitAfterLocalCloseThrows() throws Exception {
        connect();
        client.close();
        QmpConnectionClosedException e = assertThrows(QmpConnectionClosedException.class, () -> client.quit(LONG));
        assertEquals(QmpConnectionClosedException.Origin.LOCAL_CLOSE, e.origin());
    }

    @Test
    void closeIsIdempotentAndFailsPendingCommands() throws Exception {
        server.enqueue("query-status", Reply.never());
        connect();
        CompletableFuture<JsonNode> pending = client.executeAsync("query-status", null, LONG);
        client.close();
        client.close();
        ExecutionException e = assertThrows(ExecutionException.class, pending::get);
        assertEquals(QmpConnectionClosedException.Origin.LOCAL_CLOSE,
                assertInstanceOf(QmpConnectionClosedException.class, e.getCause()).origin());
    }

    @Test
    void connectRetriesUntilTheSocketAppears() throws Exception {
        Path later = tmp.resolve("later.sock");
        AtomicReference<FakeQmpServer> lateServer = new AtomicReference<>();
        Thread starter = new Thread(() -> {
            try {
                Thread.sleep(300);
                lateServer.set(FakeQmpServer.unix(later));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        starter.start();
        try (QmpClient c = QmpClient.builder(later).connectTimeout(LONG).connect()) {
            assertTrue(c.queryStatus().running());
        } finally {
            starter.join();
            if (lateServer.get() != null) {
                lateServer.get().close();
            }
        }
    }

    @Test
    void connectFailsFastWhenQemuIsGone() {
        AtomicBoolean alive = new AtomicBoolean(true);
        QmpClient.Builder b = QmpClient.builder(tmp.resolve("never.sock"))
                .connectTimeout(Duration.ofMinutes(10))
                .processAlive(() -> {
                    // QEMU "dies" after the first check
                    return alive.getAndSet(false);
                });
        QmpConnectException e = assertThrows(QmpConnectException.class, b::connect);
        assertEquals(QmpConnectException.Reason.PROCESS_EXITED, e.reason());
    }

    @Test
    void connectDeadlineNamesTheSocket() {
        Path nowhere = tmp.resolve("nowhere.sock");
        QmpConnectException e = assertThrows(QmpConnectException.class,
                () -> QmpClient.builder(nowhere).connectTimeout(Duration.ofMillis(300)).connect());
        assertEquals(QmpConnectException.Reason.DEADLINE, e.reason());
        assertTrue(e.getMessage().contains(nowhere.toString()), e.getMessage());
    }

    @Test
    void greetingMissingIsAHandshakeFailureAtTheDeadline() throws Exception {
        server.enqueue("qmp_capabilities", Reply.never());
        QmpConnectException e = assertThrows(QmpConnectException.class,
                () -> QmpClient.builder(server.socketPath()).connectTimeout(Duration.ofSeconds(2)).connect());
        assertEquals(QmpConnectException.Reason.DEADLINE, e.reason());
        assertTrue(e.getMessage().contains("qmp_capabilities"), e.getMessage());
    }

    @Test
    void notAGreetingFailsTheHandshake() throws Exception {
        server.greeting("{\"QMP\": 42}");
        QmpConnectException e = assertThrows(QmpConnectException.class,
                () -> QmpClient.builder(server.socketPath()).connectTimeout(LONG).connect());
        assertEquals(QmpConnectException.Reason.HANDSHAKE_FAILED, e.reason());
    }

    @Test
    void refusedCapabilitiesFailTheHandshake() throws Exception {
        server.enqueue("qmp_capabilities", Reply.error("GenericError", "nope"));
        QmpConnectException e = assertThrows(QmpConnectException.class,
                () -> QmpClient.builder(server.socketPath()).connectTimeout(LONG).connect());
        assertEquals(QmpConnectException.Reason.HANDSHAKE_FAILED, e.reason());
        assertInstanceOf(QmpErrorException.class, e.getCause());
    }

    @Test
    void throwingListenerDoesNotHurtOthersOrTheConnection() throws Exception {
        connect();
        client.addEventListener(e -> {
            throw new IllegalStateException("listener bug");
        });
        server.send(FakeQmpServer.event("STOP", "{}"));
        await().atMost(LONG).until(() -> events.size() == 1);
        assertTrue(client.queryStatus().running());
    }

    @Test
    void blockingCallFromAListenerIsRefusedNotDeadlocked() throws Exception {
        connect();
        AtomicReference<Throwable> seen = new AtomicReference<>();
        client.addEventListener(e -> {
            try {
                client.queryStatus();
            } catch (Throwable t) {
                seen.set(t);
            }
        });
        server.send(FakeQmpServer.event("STOP", "{}"));
        await().atMost(LONG).until(() -> seen.get() != null);
        assertInstanceOf(IllegalStateException.class, seen.get());
    }

    @Test
    void worksOverTcp() throws Exception {
        try (FakeQmpServer tcp = FakeQmpServer.tcp();
                QmpClient c = QmpClient.builder(tcp.address()).connectTimeout(LONG).connect()) {
            assertTrue(c.queryStatus().running());
        }
    }

    @Test
    void argumentsAreValidated() throws Exception {
        connect();
        assertThrows(IllegalArgumentException.class, () -> client.executeAsync(" ", null, LONG));
        assertThrows(IllegalArgumentException.class, () -> client.executeAsync("stop", null, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> QmpClient.builder(server.socketPath()).maxLineBytes(10));
    }
}
