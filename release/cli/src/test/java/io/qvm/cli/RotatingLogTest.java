package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The detached supervisor's log on real files: it never passes its cap, keeps exactly one older
 * file, keeps the newest bytes, follows a move into the session's directory, and holds its cap
 * even when it cannot rotate.
 */
@Tag("unit")
@Tag("fault")
class RotatingLogTest {

    @TempDir
    Path tmp;

    @Test
    void aLogThatRunsForDaysStaysWithinTwiceItsCapAndKeepsTheNewestBytes() throws IOException {
        Path file = tmp.resolve("supervisor.log");
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        try (RotatingLog log = new RotatingLog(file, 1000);
             PrintStream out = new PrintStream(log, true, StandardCharsets.UTF_8)) {
            for (int i = 0; i < 2000; i++) { // 2000 lines of 30 bytes: 60 times the cap
                String line = String.format("[qvm] request %06d served ..%n", i);
                out.print(line);
                all.writeBytes(line.getBytes(StandardCharsets.UTF_8));
                assertTrue(Files.size(file) <= 1000, "over the cap: " + Files.size(file));
            }
            assertTrue(log.rotations() >= 59, "rotations: " + log.rotations());
        }
        Path older = tmp.resolve("supervisor.log.1");
        assertEquals(1000, Files.size(older));
        try (Stream<Path> s = Files.list(tmp)) {
            assertEquals(2, s.count(), "one log and one older file, nothing else");
        }
        byte[] kept = concat(Files.readAllBytes(older), Files.readAllBytes(file));
        byte[] written = all.toByteArray();
        assertArrayEquals(Arrays.copyOfRange(written, written.length - kept.length, written.length), kept,
                "the two files hold the last bytes written, in order");
    }

    @Test
    void aWriteBiggerThanTheCapIsSplitAndAnExistingOversizedFileRotatesFirst() throws IOException {
        Path file = tmp.resolve("supervisor.log");
        Files.write(file, new byte[5000]); // left by the launcher's redirect, say
        try (RotatingLog log = new RotatingLog(file, 1000)) {
            byte[] big = new byte[2500];
            Arrays.fill(big, (byte) 'x');
            log.write(big, 0, big.length);
        }
        assertEquals(500, Files.size(file));
        assertEquals(1000, Files.size(RotatingLog.previous(file)));
    }

    @Test
    void theLogFollowsAMoveAndRotatesInItsNewPlace() throws IOException {
        Path launch = Files.createDirectories(tmp.resolve("launch"));
        Path session = Files.createDirectories(tmp.resolve("session"));
        try (RotatingLog log = new RotatingLog(launch.resolve("supervisor.log"), 100)) {
            log.write(new byte[150], 0, 150); // one rotation in the launch directory
            log.moveTo(session.resolve("supervisor.log"));
            log.write("after the move\n".getBytes(StandardCharsets.UTF_8));
            log.write(new byte[200], 0, 200);
            assertEquals(session.resolve("supervisor.log"), log.file());
        }
        try (Stream<Path> s = Files.list(launch)) {
            assertEquals(0, s.count(), "nothing stays behind in the launch directory");
        }
        assertTrue(Files.size(session.resolve("supervisor.log")) <= 100);
        assertTrue(Files.exists(session.resolve("supervisor.log.1")));
    }

    @Test
    void whenItCannotRotateItDropsTheOlderBytesRatherThanPassTheCap() throws IOException {
        Path file = tmp.resolve("supervisor.log");
        Path blocker = Files.createDirectories(RotatingLog.previous(file)); // a non-empty directory: no move there
        Files.writeString(blocker.resolve("x"), "x");
        try (RotatingLog log = new RotatingLog(file, 100)) {
            log.write(new byte[100], 0, 100);
            log.write("newest".getBytes(StandardCharsets.UTF_8));
            assertEquals(1, log.rotations());
        }
        assertEquals("newest", Files.readString(file));
        assertTrue(Files.isDirectory(blocker));
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
