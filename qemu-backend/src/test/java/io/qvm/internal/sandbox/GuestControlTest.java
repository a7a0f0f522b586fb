package io.qvm.internal.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.image.ControlProtocol;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The host's end of the control port against a fake guest init on a real AF_UNIX socket. */
@Tag("unit")
class GuestControlTest {

    private static final Duration LONG = Duration.ofSeconds(30);
    private static final Instant NOW = Instant.parse("2030-01-01T00:00:00.600Z");

    @TempDir
    Path tmp;

    private FakeInit init;
    private GuestControl control;

    @AfterEach
    void tearDown() throws Exception {
        if (control != null) {
            control.close();
        }
        if (init != null) {
            init.close();
        }
    }

    /**
     * The guest init's end: reads one command line at a time and writes the lines
     * {@code answer} gives for it (none: it stays silent; null: it hangs up).
     */
    static final class FakeInit implements AutoCloseable {
        private final ServerSocketChannel server;
        private final Path socket;
        private final Function<String, List<String>> answer;
        private final List<String> received = new CopyOnWriteArrayList<>();
        private final List<Throwable> errors = new CopyOnWriteArrayList<>();
        private final AtomicInteger accepted = new AtomicInteger();
        private final Thread thread;
        private volatile SocketChannel current;
        private volatile boolean closed;

        FakeInit(Path socket, Function<String, List<String>> answer) throws IOException {
            this.socket = socket;
            this.answer = answer;
            this.server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(socket));
            this.thread = new Thread(this::serve, "fake-init");
            thread.setDaemon(true);
            thread.start();
        }

        private void serve() {
            try (SocketChannel ch = server.accept()) {
                current = ch;
                accepted.incrementAndGet();
                BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch),
                        StandardCharsets.US_ASCII));
                OutputStream out = Channels.newOutputStream(ch);
                String line;
                while ((line = in.readLine()) != null) {
                    received.add(line);
                    List<String> reply = answer.apply(line);
                    if (reply == null) {
                        return; // hang up
                    }
                    for (String r : reply) {
                        out.write((r + "\n").getBytes(StandardCharsets.US_ASCII));
                    }
                    out.flush();
                }
            } catch (IOException e) {
                if (!closed) {
                    errors.add(e);
                }
            }
        }

        List<String> received() {
            return List.copyOf(received);
        }

        int accepted() {
            return accepted.get();
        }

        @Override
        public void close() throws Exception {
            closed = true;
            server.close();
            SocketChannel ch = current;
            if (ch != null) {
                ch.close();
            }
            thread.join(10_000);
            Files.deleteIfExists(socket);
            assertEquals(List.of(), errors);
        }
    }

    /** The token of a command line: the second word of ping, the third of restore. */
    private static String token(String command) {
        String[] w = command.split(" ");
        return w[0].equals("restore") ? w[2] : w[w.length - 1];
    }

    private GuestControl connect(Function<String, List<String>> answer) throws Exception {
        init = new FakeInit(tmp.resolve("control.sock"), answer);
        control = GuestControl.connect(init.socket, LONG, () -> true);
        return control;
    }

    private static String padded(String line, int bytes) {
        return line + " ".repeat(bytes - line.length());
    }

    @Test
    void restoreSendsTheClockAndReturnsWhatTheInitReported() throws Exception {
        connect(cmd -> List.of("restored " + token(cmd) + " clock=1893456001 forks=2"));
        GuestControl.Restored r = control.restore(NOW, Optional.empty(), LONG);
        assertEquals(new GuestControl.Restored(1893456001L, 2, false), r);

        String sent = init.received().get(0);
        String[] words = sent.split(" ");
        assertEquals(3, words.length, sent);
        assertEquals("restore", words[0]);
        assertEquals("1893456001", words[1], "2030-01-01T00:00:00.600Z rounds to the next second");
        assertTrue(words[2].matches("[0-9a-f]{16}"), "a fresh random token: " + words[2]);
    }

    @Test
    void restoreWithASeedSendsItInHexAndReadsWhetherTheInitReseeded() throws Exception {
        connect(cmd -> List.of("restored " + token(cmd) + " clock=1893456001 forks=0 reseeded=1"));
        byte[] seed = GuestControl.freshSeed();
        assertEquals(ControlProtocol.SEED_BYTES, seed.length);
        GuestControl.Restored r = control.restore(NOW, Optional.of(seed), LONG);
        assertEquals(new GuestControl.Restored(1893456001L, 0, true), r);
        String[] words = init.received().get(0).split(" ");
        assertEquals(4, words.length, init.received().toString());
        assertEquals(java.util.HexFormat.of().formatHex(seed), words[3], "the seed, lower-case hex");
        assertTrue(words[3].matches("[0-9a-f]{" + ControlProtocol.SEED_HEX_DIGITS + "}"), words[3]);
        assertFalse(java.util.Arrays.equals(seed, GuestControl.freshSeed()), "every seed is fresh");
    }

    @Test
    void anInitThatCouldNotReseedSaysSoAndAnOlderOneSaysNothing() throws Exception {
        connect(cmd -> List.of(cmd.endsWith(token(cmd))
                ? "restored " + token(cmd) + " clock=5 forks=1"
                : "restored " + token(cmd) + " clock=5 forks=1 reseeded=0"));
        assertFalse(control.restore(NOW, Optional.of(GuestControl.freshSeed()), LONG).reseeded());
        assertEquals(new GuestControl.Restored(5, 1, false), control.restore(NOW, Optional.empty(), LONG));
    }

    @Test
    void aSeedOfTheWrongSizeIsRefusedBeforeAnythingIsSent() throws Exception {
        connect(cmd -> List.of("restored " + token(cmd) + " clock=5 forks=1 reseeded=1"));
        assertThrows(IllegalArgumentException.class, () -> control.restore(NOW, Optional.of(new byte[16]), LONG));
        assertEquals(List.of(), init.received());
    }

    @Test
    void setClockSendsTheClockAloneAndReturnsTheGuests() throws Exception {
        connect(cmd -> List.of("clockset " + token(cmd) + " clock=1893456001"));
        assertEquals(1893456001L, control.setClock(NOW, LONG));
        String[] words = init.received().get(0).split(" ");
        assertEquals(List.of("setclock", "1893456001"), List.of(words[0], words[1]));
        assertEquals(3, words.length, "no seed: " + init.received());
    }

    /**
     * A guest clock {@code offsetMicros} from this host's, which {@code step} moves, read
     * {@code readLateMillis} after the command arrives (as a guest just resumed, or a slow perl,
     * reads it late in the exchange); {@code moves} false: the steps are answered but do nothing.
     */
    private static Function<String, List<String>> guestClock(long[] offsetMicros, long readLateMillis, boolean moves) {
        return cmd -> {
            String[] w = cmd.split(" ");
            try {
                Thread.sleep(readLateMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (moves) {
                offsetMicros[0] += Long.parseLong(w[1]);
            }
            Instant now = Instant.now();
            long g = now.getEpochSecond() * 1_000_000 + now.getNano() / 1000 + offsetMicros[0];
            return List.of("stepped " + w[2] + " clock=" + g / 1_000_000 + "." + String.format("%06d", g % 1_000_000));
        };
    }

    @Test
    void syncClockMeasuresTheOffsetThenStepsItAway() throws Exception {
        long[] offset = {-1_300_000};
        connect(guestClock(offset, 0, true));
        GuestControl.Synced s = control.syncClock(0, LONG);
        List<String> sent = init.received();
        assertEquals(2, sent.size(), "a measure, then a step: " + sent);
        assertEquals("0", sent.get(0).split(" ")[1], "the first exchange only measures");
        long step = Long.parseLong(sent.get(1).split(" ")[1]);
        assertTrue(Math.abs(step - 1_300_000) < 20_000, "the step is the offset measured: " + sent);
        assertEquals(2, s.steps());
        assertTrue(Math.abs(offset[0]) < 20_000, "the guest is the host's to within the exchange: " + offset[0] + " us");
        assertTrue(Math.abs(s.offsetMicros()) <= Math.max(GuestControl.CLOSE_ENOUGH_MICROS, s.uncertaintyMicros()), s::toString);
        assertFalse(s.off(GuestControl.MAX_CLOCK_SKEW));
    }

    @Test
    void theCallersFirstStepIsTakenAndOneExchangeIsEnoughWhenItWasRight() throws Exception {
        long[] offset = {-2_500_000}; // a VM that stood still for 2.5 s
        connect(guestClock(offset, 0, true));
        GuestControl.Synced s = control.syncClock(2_500_000, LONG);
        assertEquals(1, s.steps(), s::toString);
        assertEquals("2500000", init.received().get(0).split(" ")[1]);
        assertTrue(Math.abs(offset[0]) < 1000, offset[0] + " us");
    }

    @Test
    void aClockReadLateInTheExchangeIsStillBroughtWithinItsUncertainty() throws Exception {
        long[] offset = {-1_300_000};
        connect(guestClock(offset, 200, true));
        GuestControl.Synced s = control.syncClock(0, LONG);
        assertTrue(s.uncertaintyMicros() >= 100_000, s::toString);
        assertTrue(Math.abs(offset[0]) <= s.uncertaintyMicros() + 20_000, "within what the channel can tell: "
                + offset[0] + " us, " + s);
        assertFalse(s.off(GuestControl.MAX_CLOCK_SKEW), s::toString);
    }

    @Test
    void aClockThatDoesNotMoveIsStillOffAfterTheLastStepAndSaysSo() throws Exception {
        long[] offset = {-3_000_000};
        connect(guestClock(offset, 0, false));
        GuestControl.Synced s = control.syncClock(0, LONG);
        assertEquals(GuestControl.MAX_STEPS, s.steps());
        assertEquals(GuestControl.MAX_STEPS, init.received().size());
        assertTrue(s.off(GuestControl.MAX_CLOCK_SKEW), s::toString);
        assertTrue(s.offsetMicros() < -2_900_000, s::toString);
    }

    @Test
    void aStepTheInitCouldNotMakeOrDoesNotKnowIsRefused() throws Exception {
        connect(cmd -> List.of("error " + token(cmd) + " " + ControlProtocol.STEP_FAILED));
        GuestControl.Refused r = assertThrows(GuestControl.Refused.class, () -> control.syncClock(0, LONG));
        assertFalse(r.unknownCommand());
        assertTrue(r.getMessage().contains("refused 'step': step-failed"), r.getMessage());
        control.close();
        init.close();
        connect(cmd -> List.of("error " + token(cmd) + " unknown-command"));
        assertTrue(assertThrows(GuestControl.Refused.class, () -> control.syncClock(0, LONG)).unknownCommand());
    }

    @Test
    void aSteppedAnswerWithoutMicrosecondsIsNoAnswer() throws Exception {
        connect(cmd -> List.of("stepped " + token(cmd) + " clock=1893456000", "stepped " + token(cmd) + " clock=1.5"));
        IOException e = assertThrows(IOException.class, () -> control.syncClock(0, Duration.ofMillis(300)));
        assertTrue(e.getMessage().contains("did not answer 'step' within"), e.getMessage());
    }

    @Test
    void anInitThatDoesNotKnowAWordIsTold() throws Exception {
        connect(cmd -> List.of("error " + token(cmd) + " unknown-command"));
        GuestControl.Refused r = assertThrows(GuestControl.Refused.class, () -> control.setClock(NOW, LONG));
        assertTrue(r.unknownCommand(), r.getMessage());
    }

    @Test
    void aPortThatClosesBeforeTheAnswerFailsTheCommandAtOnceNotAtItsTimeout() throws Exception {
        connect(cmd -> null); // the init's end hangs up: QEMU exited
        long t0 = System.nanoTime();
        IOException e = assertThrows(IOException.class,
                () -> control.restore(NOW, Optional.empty(), Duration.ofSeconds(60)));
        assertTrue(e.getMessage().contains("closed before it answered"), e.getMessage());
        assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(30).toNanos(), "told when the port closed, not after"
                + " the command's 60 s");
        long t1 = System.nanoTime();
        assertThrows(IOException.class, () -> control.ping(Duration.ofSeconds(60)));
        assertTrue(System.nanoTime() - t1 < Duration.ofSeconds(30).toNanos(), "every later command too");
    }

    @Test
    void restoreRoundsToTheNearestSecond() throws Exception {
        connect(cmd -> List.of("restored " + token(cmd) + " clock=1 forks=1"));
        control.restore(Instant.parse("2030-01-01T00:00:00.400Z"), Optional.empty(), LONG);
        assertEquals("1893456000", init.received().get(0).split(" ")[1]);
    }

    @Test
    void everyCommandHasItsOwnToken() throws Exception {
        connect(cmd -> List.of(cmd.startsWith("ping") ? "pong " + token(cmd) : "restored " + token(cmd) + " clock=1 forks=1"));
        control.ping(LONG);
        control.ping(LONG);
        control.restore(NOW, Optional.empty(), LONG);
        List<String> tokens = init.received().stream().map(GuestControlTest::token).distinct().toList();
        assertEquals(3, tokens.size(), init.received().toString());
    }

    @Test
    void staleAnswersAndNoiseBeforeTheRightOneAreSkipped() throws Exception {
        connect(cmd -> List.of(
                "restored 0123456789abcdef clock=111 forks=5", // the template's, or an earlier session's
                "pong " + token(cmd),                          // the right token, the wrong shape
                "error 0123456789abcdef bad-command",          // someone else's error
                "error - bad-command",                         // an error for a line the init could not read
                "qvm: phase=whatever",
                "",
                "restored " + token(cmd) + " clock=42 forks=1"));
        assertEquals(new GuestControl.Restored(42, 1, false), control.restore(NOW, Optional.empty(), LONG));
    }

    @Test
    void anErrorWithTheTokenIsAnIOExceptionWithTheReason() throws Exception {
        connect(cmd -> List.of("error " + token(cmd) + " bad-command"));
        IOException e = assertThrows(IOException.class, () -> control.restore(NOW, Optional.empty(), LONG));
        assertTrue(e.getMessage().contains("refused 'restore': bad-command"), e.getMessage());
    }

    @Test
    void noAnswerIsAnIOExceptionAfterTheTimeout() throws Exception {
        connect(cmd -> List.of());
        IOException e = assertThrows(IOException.class, () -> control.restore(NOW, Optional.empty(), Duration.ofMillis(300)));
        assertTrue(e.getMessage().contains("did not answer 'restore' within 300 ms"), e.getMessage());
        assertEquals(1, init.received().size());
    }

    @Test
    void aPortThatClosesBeforeAnsweringIsAnIOException() throws Exception {
        connect(cmd -> null);
        IOException e = assertThrows(IOException.class, () -> control.ping(Duration.ofSeconds(1)));
        assertTrue(e.getMessage().contains("closed before it answered 'ping'"), e.getMessage());
        assertTrue(control.isClosed());
    }

    @Test
    void anOverlongLineIsDroppedWholeAndTheNextAnswerCounts() throws Exception {
        // 257 bytes: dropped, even though its first 256 bytes would read as a valid answer;
        // exactly 256 bytes: still a line
        connect(cmd -> List.of(
                padded("restored " + token(cmd) + " clock=5 forks=9", GuestControl.MAX_LINE + 1),
                "x".repeat(5000),
                padded("restored " + token(cmd) + " clock=7 forks=1", GuestControl.MAX_LINE)));
        assertEquals(new GuestControl.Restored(7, 1, false), control.restore(NOW, Optional.empty(), LONG));
    }

    @Test
    void pingWaitsForItsPong() throws Exception {
        connect(cmd -> List.of("pong 0000000000000000", "pong " + token(cmd)));
        control.ping(LONG);
        assertTrue(init.received().get(0).matches("ping [0-9a-f]{16}"), init.received().toString());
    }

    @Test
    void connectRetriesUntilTheSocketAppears() throws Exception {
        Path socket = tmp.resolve("control.sock");
        AtomicInteger polls = new AtomicInteger();
        AtomicReference<IOException> failed = new AtomicReference<>();
        control = GuestControl.connect(socket, LONG, () -> {
            // QEMU creates its chardev socket only after the third failed attempt
            if (polls.incrementAndGet() == 3) {
                try {
                    init = new FakeInit(socket, cmd -> List.of("pong " + token(cmd)));
                } catch (IOException e) {
                    failed.set(e);
                }
            }
            return true;
        });
        assertNull(failed.get());
        assertEquals(3, polls.get(), "three failed attempts, then connected");
        control.ping(LONG);
        assertEquals(1, init.accepted());
    }

    @Test
    void connectFailsAtOnceWhenThePeerDied() {
        IOException e = assertThrows(IOException.class,
                () -> GuestControl.connect(tmp.resolve("control.sock"), LONG, () -> false));
        assertTrue(e.getMessage().contains("QEMU exited before its control socket"), e.getMessage());
    }

    @Test
    void connectGivesUpAtTheTimeout() {
        IOException e = assertThrows(IOException.class,
                () -> GuestControl.connect(tmp.resolve("control.sock"), Duration.ofMillis(200), () -> true));
        assertTrue(e.getMessage().contains("did not accept a connection within 200 ms"), e.getMessage());
    }
}
