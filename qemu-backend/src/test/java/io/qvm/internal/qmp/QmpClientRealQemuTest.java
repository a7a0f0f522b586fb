package io.qvm.internal.qmp;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link QmpClient} against a real {@code qemu-system-x86_64 -M none} (no guest, no accelerator
 * needed). Skipped only when the binary is not installed.
 */
@Tag("unit")
@Tag("qemu")
class QmpClientRealQemuTest {

    private static final Duration LONG = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    private Process qemu;
    private QmpClient client;
    private final List<QmpEvent> events = new CopyOnWriteArrayList<>();

    static String qemuBinary() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir, "qemu-system-x86_64");
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    @BeforeEach
    void startQemu() throws Exception {
        String binary = qemuBinary();
        assumeTrue(binary != null, "qemu-system-x86_64 is not on PATH; install package qemu-system-x86 to run this test");
        Path sock = tmp.resolve("qmp.sock");
        qemu = new ProcessBuilder(binary, "-M", "none", "-nodefaults", "-no-user-config", "-display", "none",
                "-qmp", "unix:" + sock + ",server=on,wait=off")
                .redirectErrorStream(true)
                .redirectOutput(tmp.resolve("qemu.log").toFile())
                .start();
        client = QmpClient.builder(sock)
                .connectTimeout(LONG)
                .commandTimeout(LONG)
                .processAlive(qemu::isAlive)
                .eventListener(events::add)
                .connect();
    }

    @AfterEach
    void stopQemu() throws Exception {
        if (client != null) {
            client.close();
        }
        if (qemu != null) {
            qemu.destroyForcibly();
            qemu.waitFor(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void greetingStatusVersionErrorsAndQuit() throws Exception {
        QmpGreeting greeting = client.greeting();
        assertTrue(greeting.major() >= 2, "greeting: " + greeting);

        QmpStatus status = client.queryStatus();
        assertEquals(QmpStatus.RUNNING, status.status());
        assertTrue(status.running());

        JsonNode version = client.execute("query-version");
        assertEquals(greeting.major(), version.path("qemu").path("major").asInt());
        assertEquals(greeting.minor(), version.path("qemu").path("minor").asInt());

        QmpErrorException unknown = assertThrows(QmpErrorException.class, () -> client.execute("qvm-no-such-command"));
        assertEquals(QmpErrorException.COMMAND_NOT_FOUND, unknown.errorClass());

        client.stop();
        assertFalse(client.queryStatus().running());
        client.cont();
        assertTrue(client.queryStatus().running());
        await().atMost(LONG).until(() -> events.stream().anyMatch(QmpEvent::isStop)
                && events.stream().anyMatch(QmpEvent::isResume));

        client.quit(LONG);
        assertTrue(client.awaitClosed(LONG), "QEMU hangs up after quit");
        assertTrue(qemu.waitFor(60, TimeUnit.SECONDS), "QEMU exits after quit");
        assertEquals(0, qemu.exitValue());
        QmpEvent.Shutdown shutdown = events.stream().flatMap(e -> e.shutdown().stream()).findFirst().orElseThrow();
        assertEquals(QmpEvent.ShutdownCause.HOST_QMP_QUIT, shutdown.cause());
        assertFalse(shutdown.guest());
        assertThrows(QmpConnectionClosedException.class, () -> client.queryStatus());
    }

    @Test
    void killedQemuFailsPendingAndLaterCommands() throws Exception {
        assertTrue(client.queryStatus().running());
        qemu.destroyForcibly();
        QmpConnectionClosedException reason = client.whenClosed().get(60, TimeUnit.SECONDS);
        assertTrue(reason.closedByPeer(), reason.toString());
        assertThrows(QmpConnectionClosedException.class, () -> client.queryStatus());
    }
}
