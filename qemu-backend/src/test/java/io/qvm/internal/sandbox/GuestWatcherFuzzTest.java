package io.qvm.internal.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.qvm.protocol.image.InitEvents;
import io.qvm.protocol.image.InitEvents.Phase;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;

/**
 * {@link GuestWatcher} on real files, whatever the guest writes: the same bytes as the events file
 * read at once, and as the events file appended in chunks the fuzzer picks while the same bytes
 * also go to the console (as a worker that owns its sandbox would forge them there). In both cases
 * no exception, and a state bounded by the contract: at most one entry per
 * phase, in the contract's order, each one a line that parses as that phase; a worker status only
 * with worker-exit, in 0..255; an error only from an error line, at most
 * {@value GuestWatcher#MAX_ERROR_CHARS} characters and an ellipsis, with no control characters;
 * at most one progress line per phase, one for the error and one for an overflow. The chunking
 * changes nothing, the console never makes an event, and the overflow fires once exactly when
 * either file passes its cap (the console's, or the events file's 64 KiB). The fuzzer's input is sometimes repeated up to 24 times, so the events file's
 * cap is reached too.
 *
 * <p>Kept inputs: the init's events of a boot, and hostile variants, in
 * {@code GuestWatcherFuzzTestInputs/} (their last bytes are the fuzzer's choices of repetition,
 * chunking and console cap, so the text ends with padding).
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class GuestWatcherFuzzTest {

    private static final Path ROOT = temporaryRoot();
    private static final AtomicInteger RUNS = new AtomicInteger();

    @FuzzTest(maxDuration = "10s")
    void whateverTheGuestWritesTheStateStaysWithinTheContract(FuzzedDataProvider data) throws IOException {
        int repeat = data.consumeInt(0, 7) == 0 ? data.consumeInt(2, 24) : 1;
        int cuts = data.consumeInt(0, 16);
        long cutSeed = data.consumeLong();
        int consoleCap = data.consumeInt(0, 1 << 16);
        byte[] once = data.consumeRemainingAsBytes();
        byte[] bytes = new byte[once.length * repeat];
        for (int i = 0; i < repeat; i++) {
            System.arraycopy(once, 0, bytes, i * once.length, once.length);
        }
        Path dir = Files.createDirectories(ROOT.resolve("run-" + RUNS.incrementAndGet()));
        try {
            State whole = watch(dir, bytes, List.of(bytes), false, consoleCap);
            State chunked = watch(dir, bytes, chunks(bytes, cuts, cutSeed), true, consoleCap);
            assertEquals(whole.withoutConsole(), chunked.withoutConsole(),
                    "chunks and a forged console change nothing");
            long fileBytes = bytes.length; // each file holds all of them
            boolean past = fileBytes > consoleCap || fileBytes > GuestWatcher.MAX_EVENT_BYTES;
            assertEquals(past ? 1 : 0, chunked.overflows, "one overflow, for either cap, exactly once past it");
            assertEquals(past, chunked.overflowed);
            assertEquals(fileBytes > GuestWatcher.MAX_EVENT_BYTES ? 1 : 0, whole.overflows,
                    "the events file alone: its own cap");
        } finally {
            deleteTree(dir);
        }
    }

    /** What a watcher kept, and how often its overflow ran. */
    private record State(List<String> phases, Map<String, Duration> guestPhases, Optional<String> error,
            Optional<Integer> status, int violations, int progressLines, int overflows, boolean overflowed) {

        State withoutConsole() {
            return new State(phases, guestPhases, error, status, violations, 0, 0, false);
        }
    }

    /**
     * A fresh watcher on {@code dir}'s files: the events arrive in {@code chunks} (each followed by
     * a poll), and with {@code forgeConsole} the same chunks go to the console too.
     */
    private static State watch(Path dir, byte[] events, List<byte[]> chunks, boolean forgeConsole, int consoleCap)
            throws IOException {
        Path eventsFile = dir.resolve("events.log");
        Path consoleFile = dir.resolve("console.log");
        Files.write(eventsFile, new byte[0]);
        Files.write(consoleFile, new byte[0]);
        AtomicInteger overflows = new AtomicInteger();
        List<String> progress = new java.util.concurrent.CopyOnWriteArrayList<>();
        GuestWatcher w = new GuestWatcher(eventsFile, consoleFile, consoleCap, overflows::incrementAndGet,
                System.nanoTime(), progress::add);
        try {
            for (byte[] chunk : chunks) {
                Files.write(eventsFile, chunk, StandardOpenOption.APPEND);
                if (forgeConsole) {
                    Files.write(consoleFile, chunk, StandardOpenOption.APPEND);
                }
                w.poll();
            }
            w.poll();
        } finally {
            w.close();
        }
        State s = new State(List.copyOf(w.guestPhases().keySet()), w.guestPhases(), w.error(), w.workerExitStatus(),
                w.violations(), progress.size(), overflows.get(), w.overflow().isPresent());
        assertWithinTheContract(s, w, events);
        return s;
    }

    private static void assertWithinTheContract(State s, GuestWatcher w, byte[] events) {
        Set<Phase> written = EnumSet.noneOf(Phase.class);
        boolean errorWritten = false;
        for (String line : lines(events)) {
            Optional<InitEvents.Event> e = InitEvents.parse(line);
            if (e.isPresent()) {
                e.get().phase().ifPresent(written::add);
                errorWritten |= e.get().error().isPresent();
            }
        }
        List<String> inOrder = Arrays.stream(Phase.values()).map(Phase::id).filter(s.phases::contains).toList();
        assertEquals(inOrder, s.phases, "each phase once, in the contract's order");
        assertEquals(s.phases, List.copyOf(w.hostArrival().keySet()), "one arrival per phase");
        for (Phase p : Phase.values()) {
            assertEquals(s.phases.contains(p.id()), w.reached(p));
            assertTrue(!w.reached(p) || written.contains(p), "a phase no line of the events file names: " + p);
        }
        assertEquals(w.reached(Phase.WORKER_EXIT), s.status.isPresent(), "a status exactly with worker-exit");
        s.status.ifPresent(st -> assertTrue(st >= 0 && st <= 255, "status " + st));
        s.guestPhases.values().forEach(d -> assertTrue(!d.isNegative(), "uptime " + d));
        if (s.error.isPresent()) {
            String e = s.error.get();
            assertTrue(errorWritten, "an error no line of the events file has");
            assertTrue(e.length() <= GuestWatcher.MAX_ERROR_CHARS + 1, "error of " + e.length() + " characters");
            assertTrue(e.codePoints().noneMatch(c -> c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0),
                    "a control character in the error: " + e);
        }
        assertTrue(s.violations >= 0);
        assertTrue(s.progressLines <= s.phases.size() + 2, s.progressLines + " progress lines");
    }

    /**
     * The lines of the events file as the watcher can have read them: up to its cap, each ended
     * by a line feed, decoded as UTF-8.
     */
    private static List<String> lines(byte[] events) {
        byte[] read = Arrays.copyOf(events, Math.min(events.length, GuestWatcher.MAX_EVENT_BYTES));
        List<String> lines = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < read.length; i++) {
            if (read[i] == '\n') {
                lines.add(new String(read, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        return lines;
    }

    /** {@code bytes} cut at up to {@code cuts} places the seed picks. */
    private static List<byte[]> chunks(byte[] bytes, int cuts, long seed) {
        Random r = new Random(seed);
        int[] at = new int[cuts + 2];
        for (int i = 0; i < cuts; i++) {
            at[i] = bytes.length == 0 ? 0 : r.nextInt(bytes.length + 1);
        }
        at[cuts] = 0;
        at[cuts + 1] = bytes.length;
        Arrays.sort(at);
        List<byte[]> chunks = new ArrayList<>();
        for (int i = 0; i + 1 < at.length; i++) {
            chunks.add(Arrays.copyOfRange(bytes, at[i], at[i + 1]));
        }
        return chunks;
    }

    private static Path temporaryRoot() {
        try {
            return Files.createTempDirectory("qvm-guest-watcher-fuzz");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted((a, b) -> b.compareTo(a)).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    @AfterAll
    static void removeRoot() throws IOException {
        deleteTree(ROOT);
    }
}
