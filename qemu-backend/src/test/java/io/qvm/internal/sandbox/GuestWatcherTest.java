package io.qvm.internal.sandbox;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.image.InitEvents;
import io.qvm.protocol.image.InitEvents.Phase;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The guest follower on real files written the way QEMU writes them (appended in pieces): the
 * init's events file, read strictly, and the console, only watched. The hostile cases are those of
 * a worker that owns its sandbox and writes whatever it likes to the console.
 */
@Tag("unit")
@Tag("security")
class GuestWatcherTest {

    /** Generous: the watcher polls every 50 ms, but this machine may be busy. */
    private static final Duration PATIENCE = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    private Path events() {
        return dir.resolve("events.log");
    }

    private Path console() {
        return dir.resolve("console.log");
    }

    private GuestWatcher watcher(List<String> progress) {
        return new GuestWatcher(events(), console(), InitEvents.CONSOLE_MAX_BYTES, () -> { }, System.nanoTime(),
                progress::add);
    }

    private static void append(Path f, String s) throws Exception {
        Files.writeString(f, s, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    @Test
    void phasesErrorsAndTheWorkersStatusAreReadAsTheyArrive() throws Exception {
        List<String> progress = new CopyOnWriteArrayList<>();
        try (GuestWatcher w = watcher(progress)) {
            append(events(), "qvm: phase=init uptime=5.08\nqvm: phase=mod");
            await().atMost(PATIENCE).until(() -> w.reached(Phase.INIT));
            assertFalse(w.reached(Phase.MODULES), "half a line is not an event yet");
            append(events(), "ules uptime=5.33\nqvm: phase=runsc uptime=5.48\n");
            await().atMost(PATIENCE).until(() -> w.reached(Phase.RUNSC));
            assertEquals(Duration.ofMillis(5330), w.guestPhases().get("modules"));
            append(events(), "qvm: phase=worker-exit status=134 uptime=49.28\nqvm: error=no port\n");
            await().atMost(PATIENCE).until(() -> w.error().isPresent());
            assertEquals(134, w.workerExitStatus().orElseThrow());
            assertEquals("no port", w.error().orElseThrow());
            assertTrue(progress.contains("guest: init (guest uptime 5.08 s)"), progress.toString());
            assertEquals(0, w.violations());
        }
    }

    /** The host side of the events contract: every phase of {@link InitEvents}, as the init writes it. */
    @Test
    void everyPhaseOfTheContractIsRecognised() throws Exception {
        try (GuestWatcher w = watcher(new CopyOnWriteArrayList<>())) {
            StringBuilder sb = new StringBuilder();
            int i = 1;
            for (Phase p : Phase.values()) {
                sb.append(InitEvents.PHASE).append(p.id()).append(' ');
                if (p == Phase.WORKER_EXIT) {
                    sb.append(InitEvents.STATUS).append("3 ");
                }
                if (p == Phase.ARCHIVE) {
                    sb.append(InitEvents.BYTES).append("23941120 ");
                }
                sb.append(InitEvents.UPTIME).append(i++).append(".25\n");
            }
            append(events(), sb.toString());
            await().atMost(PATIENCE).until(() -> w.reached(Phase.POWEROFF));
            for (Phase p : Phase.values()) {
                assertTrue(w.reached(p), p.id());
            }
            assertEquals(Duration.ofMillis(1250), w.guestPhases().get(Phase.INIT.id()));
            assertEquals(3, w.workerExitStatus().orElseThrow());
            assertEquals(23_941_120L, w.archiveBytes().orElseThrow());
            append(events(), InitEvents.ERROR + "cannot mount /proc\n");
            await().atMost(PATIENCE).until(() -> w.error().isPresent());
            assertEquals("cannot mount /proc", w.error().orElseThrow());
        }
    }

    /** What the worker prints on the console (stderr) is never an event: it cannot fake a phase or its exit. */
    @Test
    void markersOnTheConsoleAreNotEvents() throws Exception {
        try (GuestWatcher w = watcher(new CopyOnWriteArrayList<>())) {
            append(console(), "qvm: phase=init uptime=1.0\nqvm: phase=worker-exit status=0 uptime=2.0\n"
                    + "qvm: error=forged\n");
            append(events(), "qvm: phase=init uptime=1.50\n");
            await().atMost(PATIENCE).until(() -> w.reached(Phase.INIT));
            w.poll();
            assertEquals(Duration.ofMillis(1500), w.guestPhases().get("init"));
            assertEquals(List.of("init"), List.copyOf(w.guestPhases().keySet()));
            assertTrue(w.workerExitStatus().isEmpty());
            assertTrue(w.error().isEmpty());
        }
    }

    /**
     * 50,000 distinct phase lines, a status that overflows an int, phases twice and out of order:
     * nothing of it is kept (the state is bounded by the contract), the poller survives, and a
     * real event after it is still read.
     */
    @Test
    void aFloodOfEventsKeepsOnlyTheContractsState() throws Exception {
        List<String> progress = new CopyOnWriteArrayList<>();
        try (GuestWatcher w = watcher(progress)) {
            append(events(), "qvm: phase=init uptime=1.0\nqvm: phase=init uptime=1.1\nqvm: phase=rootfs uptime=1.2\n"
                    + "qvm: phase=modules uptime=1.3\nqvm: phase=worker-exit status=99999999999 uptime=2\n"
                    + "qvm: phase=worker-exit status=256 uptime=2\nqvm: phase=runsc uptime=1.4 extra\n"
                    + "qvm: phase=worker-exit status=7 uptime=3.0\n");
            await().atMost(PATIENCE).until(() -> w.reached(Phase.WORKER_EXIT));
            assertEquals(List.of("init", "rootfs", "worker-exit"), List.copyOf(w.guestPhases().keySet()));
            assertEquals(7, w.workerExitStatus().orElseThrow());
            assertEquals(5, w.violations());
            StringBuilder flood = new StringBuilder();
            for (int i = 0; i < 50_000; i++) {
                flood.append("qvm: phase=p").append(Integer.toString(i, 26).replaceAll("[0-9]", "x"))
                        .append(" uptime=1.0\n");
            }
            append(events(), flood.toString());
            await().atMost(PATIENCE).until(() -> w.violations() > 1000);
            assertEquals(3, w.guestPhases().size());
            assertTrue(progress.size() <= Phase.values().length + 1, progress::toString);
        }
    }

    @Test
    void theEventsFileIsReadOnlyUpToItsCap() throws Exception {
        try (GuestWatcher w = watcher(new CopyOnWriteArrayList<>())) {
            append(events(), "x".repeat(GuestWatcher.MAX_EVENT_BYTES) + "\nqvm: phase=init uptime=1.00\n");
            await().atMost(PATIENCE).until(() -> w.violations() > 0);
            w.poll();
            assertFalse(w.reached(Phase.INIT), "nothing past the cap is read");
        }
    }

    @Test
    void aLongLineIsNotAnEventAndTheNextOneIs() throws Exception {
        try (GuestWatcher w = watcher(new CopyOnWriteArrayList<>())) {
            append(events(), "qvm: error=" + "y".repeat(InitEvents.MAX_LINE * 4) + "\nqvm: phase=init uptime=1.00\n");
            await().atMost(PATIENCE).until(() -> w.reached(Phase.INIT));
            assertTrue(w.error().isEmpty());
            assertEquals(1, w.violations());
        }
    }

    /** The init's error text reaches messages and terminals: escaped, capped, and only the first. */
    @Test
    void theErrorIsSanitisedCappedAndTakenOnce() throws Exception {
        try (GuestWatcher w = watcher(new CopyOnWriteArrayList<>())) {
            append(events(), "qvm: error=bad \u001b[2J\u001b]0;title\u0007 " + "z".repeat(800) + "\nqvm: error=second\n");
            await().atMost(PATIENCE).until(() -> w.violations() == 1);
            String e = w.error().orElseThrow();
            assertTrue(e.startsWith("bad \\x1b[2J\\x1b]0;title\\x07 zzz"), e);
            assertEquals(GuestWatcher.MAX_ERROR_CHARS + 1, e.length(), e);
        }
    }

    @Test
    void aConsolePastItsCapStopsTheVmOnce() throws Exception {
        AtomicInteger stops = new AtomicInteger();
        List<String> progress = new CopyOnWriteArrayList<>();
        try (GuestWatcher w = new GuestWatcher(events(), console(), 10_000, stops::incrementAndGet, System.nanoTime(),
                progress::add)) {
            append(console(), "k".repeat(9_000));
            await().atMost(PATIENCE).until(() -> w.silentFor().compareTo(Duration.ofMillis(200)) > 0);
            assertTrue(w.overflow().isEmpty());
            append(console(), "k".repeat(2_000));
            await().atMost(PATIENCE).until(() -> w.overflow().isPresent());
            append(console(), "k".repeat(2_000));
            append(events(), "e".repeat(GuestWatcher.MAX_EVENT_BYTES + 1));
            w.poll();
            assertEquals(1, stops.get(), "once, for whichever cap was passed first");
            assertEquals("the guest console passed its cap of 10000 bytes", w.overflow().orElseThrow());
            assertEquals(1, progress.size(), progress.toString());
        }
    }

    /**
     * The events file's cap works like the console's, on the file's size and not on what was read
     * of it: past it the VM is stopped, by the poller alone (no one else polls here), however
     * long after the watcher started — an idle sandbox's guest is watched as a booting one is.
     */
    @Test
    void anEventsFilePastItsCapStopsTheVmOnceWhoeverIsReading() throws Exception {
        AtomicInteger stops = new AtomicInteger();
        List<String> progress = new CopyOnWriteArrayList<>();
        try (GuestWatcher w = new GuestWatcher(events(), console(), InitEvents.CONSOLE_MAX_BYTES,
                stops::incrementAndGet, System.nanoTime(), progress::add)) {
            append(events(), "qvm: phase=init uptime=1.00\n");
            await().atMost(PATIENCE).until(() -> w.reached(Phase.INIT));
            // exactly at the cap: all of it read, and no overflow yet
            append(events(), "e".repeat(GuestWatcher.MAX_EVENT_BYTES - (int) Files.size(events())));
            await().atMost(PATIENCE).until(() -> w.violations() > 0);
            assertEquals(0, stops.get());
            append(events(), "e".repeat(1_000)); // never read: only the size says it is there
            await().atMost(PATIENCE).until(() -> stops.get() > 0);
            append(events(), "e".repeat(1_000));
            w.poll();
            assertEquals(1, stops.get());
            assertEquals("the init's events file passed its cap of " + GuestWatcher.MAX_EVENT_BYTES + " bytes",
                    w.overflow().orElseThrow());
            assertTrue(progress.contains(w.overflow().get() + ": stopping the VM"), progress::toString);
        }
    }

    @Test
    void silenceIsMeasuredFromTheLastByteTheGuestWrote() throws Exception {
        try (GuestWatcher w = watcher(new CopyOnWriteArrayList<>())) {
            long first = System.nanoTime();
            append(console(), "[    1.0] pci 0000:00:1f.0\n");
            await().atMost(PATIENCE).until(() -> lastGrowthNotBefore(w, first));
            Duration quiet = w.silentFor();
            await().atMost(PATIENCE).until(() -> w.silentFor().compareTo(quiet) > 0);
            assertFalse(lastGrowthNotBefore(w, System.nanoTime()), "no growth, no reset: the silence goes on");
            long second = System.nanoTime();
            append(console(), "more\n");
            await().atMost(PATIENCE).until(() -> lastGrowthNotBefore(w, second));
        }
    }

    /**
     * Whether the last growth the watcher saw came at or after {@code nanos}: {@code now - silentFor}
     * with {@code now} read first is never later than that moment, so this never says yes early.
     */
    private static boolean lastGrowthNotBefore(GuestWatcher w, long nanos) {
        long now = System.nanoTime();
        return now - w.silentFor().toNanos() - nanos >= 0;
    }
}
