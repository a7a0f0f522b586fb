package io.qvm.backend.sandbox;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.image.ConsoleMarkers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The console follower on a real file written the way QEMU writes it: appended in pieces. */
@Tag("unit")
class ConsoleWatcherTest {

    /** Generous: the watcher polls every 50 ms, but this machine may be busy. */
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    private void append(Path f, String s) throws Exception {
        Files.writeString(f, s, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    @Test
    void phasesErrorsAndTheWorkersStatusAreReadAsTheyArrive() throws Exception {
        Path f = dir.resolve("console.log");
        List<String> progress = new CopyOnWriteArrayList<>();
        try (ConsoleWatcher w = new ConsoleWatcher(f, System.nanoTime(), progress::add)) {
            append(f, "[    4.8] Run /init as init process\nqvm: phase=init uptime=5.08\nqvm: phase=mod");
            await().atMost(PATIENCE).until(() -> w.reached("init"));
            assertFalse(w.reached("modules"), "half a line is not a marker yet");
            append(f, "ules uptime=5.33\r\nqvm: phase=runsc uptime=5.48\n");
            await().atMost(PATIENCE).until(() -> w.reached("runsc"));
            assertEquals(Duration.ofMillis(5330), w.guestPhases().get("modules"));
            append(f, "worker: starting\nqvm: phase=worker-exit status=134 uptime=49.28\nqvm: error=no port\n");
            await().atMost(PATIENCE).until(() -> w.error().isPresent());
            assertEquals(134, w.workerExitStatus().orElseThrow());
            assertEquals("no port", w.error().orElseThrow());
            assertTrue(progress.contains("guest: init (guest uptime 5.08 s)"), progress.toString());
        }
    }

    /** The host side of the console contract: every phase of {@link ConsoleMarkers}, as the init prints it. */
    @Test
    void everyPhaseOfTheContractIsRecognised() throws Exception {
        Path f = dir.resolve("console.log");
        try (ConsoleWatcher w = new ConsoleWatcher(f, System.nanoTime(), line -> { })) {
            StringBuilder sb = new StringBuilder();
            int i = 1;
            for (ConsoleMarkers.Phase p : ConsoleMarkers.Phase.values()) {
                sb.append(ConsoleMarkers.PHASE).append(p.id()).append(' ');
                if (p == ConsoleMarkers.Phase.WORKER_EXIT) {
                    sb.append(ConsoleMarkers.STATUS).append("3 ");
                }
                sb.append(ConsoleMarkers.UPTIME).append(i++).append(".25\n");
            }
            append(f, sb.toString());
            await().atMost(Duration.ofSeconds(10)).until(() -> w.reached(ConsoleMarkers.Phase.POWEROFF.id()));
            for (ConsoleMarkers.Phase p : ConsoleMarkers.Phase.values()) {
                assertTrue(w.reached(p.id()), p.id());
            }
            assertEquals(Duration.ofMillis(1250), w.guestPhases().get(ConsoleMarkers.Phase.INIT.id()));
            assertEquals(3, w.workerExitStatus().orElseThrow());
            append(f, ConsoleMarkers.ERROR + "cannot mount /proc\n");
            await().atMost(Duration.ofSeconds(10)).until(() -> w.error().isPresent());
            assertEquals("cannot mount /proc", w.error().orElseThrow());
        }
    }

    @Test
    void silenceIsMeasuredFromTheLastByteTheGuestWrote() throws Exception {
        Path f = dir.resolve("console.log");
        try (ConsoleWatcher w = new ConsoleWatcher(f, System.nanoTime(), line -> { })) {
            long first = System.nanoTime();
            append(f, "[    1.0] pci 0000:00:1f.0\n");
            await().atMost(PATIENCE).until(() -> lastGrowthNotBefore(w, first));
            Duration quiet = w.silentFor();
            await().atMost(PATIENCE).until(() -> w.silentFor().compareTo(quiet) > 0);
            assertFalse(lastGrowthNotBefore(w, System.nanoTime()), "no growth, no reset: the silence goes on");
            long second = System.nanoTime();
            append(f, "more\n");
            await().atMost(PATIENCE).until(() -> lastGrowthNotBefore(w, second));
        }
    }

    /**
     * Whether the last growth the watcher saw came at or after {@code nanos}: {@code now - silentFor}
     * with {@code now} read first is never later than that moment, so this never says yes early.
     */
    private static boolean lastGrowthNotBefore(ConsoleWatcher w, long nanos) {
        long now = System.nanoTime();
        return now - w.silentFor().toNanos() - nanos >= 0;
    }

    @Test
    void aLineWithoutNewlinesCannotGrowWithoutBound() throws Exception {
        Path f = dir.resolve("console.log");
        try (ConsoleWatcher w = new ConsoleWatcher(f, System.nanoTime(), line -> { })) {
            append(f, "x".repeat(1 << 20));
            append(f, "\nqvm: phase=init uptime=1.00\n");
            await().atMost(PATIENCE).until(() -> w.reached("init"));
        }
    }
}
