package io.qvm.internal.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class LogTailTest {

    @TempDir
    Path tmp;

    @Test
    void smallFileIsReturnedWhole() throws Exception {
        Path f = Files.writeString(tmp.resolve("a.log"), "one\ntwo\n");
        assertEquals("one\ntwo\n", LogTail.tail(f, 4096));
    }

    @Test
    void bigFileGivesOnlyWholeLinesOfTheTail() throws Exception {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 10_000; i++) {
            sb.append("line ").append(i).append('\n');
        }
        Path f = Files.writeString(tmp.resolve("big.log"), sb);
        String tail = LogTail.tail(f, 100);
        assertTrue(tail.startsWith("[... "), tail);
        assertTrue(tail.endsWith("line 9999\n"), tail);
        String[] lines = tail.split("\n");
        for (int i = 1; i < lines.length; i++) {
            assertTrue(lines[i].matches("line \\d+"), "no cut-off line: " + lines[i]);
        }
    }

    @Test
    void controlCharactersAndBadUtf8AreNeutralised() throws Exception {
        byte[] bytes = "ok\u001b[31mred\u0007\r\n".getBytes(StandardCharsets.UTF_8);
        byte[] withBad = new byte[bytes.length + 2];
        System.arraycopy(bytes, 0, withBad, 0, bytes.length);
        withBad[bytes.length] = (byte) 0xff;
        withBad[bytes.length + 1] = '\n';
        Path f = Files.write(tmp.resolve("c.log"), withBad);
        assertEquals("ok\\x1b[31mred\\x07\n\uFFFD\n", LogTail.tail(f, 4096));
    }

    @Test
    @Tag("security")
    void aTailFromAMarkHoldsNothingWrittenBeforeIt() throws Exception {
        Path f = Files.writeString(tmp.resolve("console.log"), "earlier document: secret-of-tenant-a\n");
        long mark = Files.size(f);
        Files.writeString(f, "this request: line 1\nline 2\n", java.nio.file.StandardOpenOption.APPEND);
        String tail = LogTail.tail(f, mark, 4096);
        assertEquals("this request: line 1\nline 2\n", tail);
        assertEquals("", LogTail.tail(f, Files.size(f), 4096), "nothing written since the mark: nothing");
        String cut = LogTail.tail(f, mark, 10);
        assertTrue(cut.startsWith("[... ") && !cut.contains("secret"), cut);
    }

    @Test
    void missingFileIsSaidNotThrown() {
        assertTrue(LogTail.tail(tmp.resolve("nope"), 10).startsWith("(no file"));
    }

    @Test
    void exitInfoDecodesSignals() {
        assertEquals("killed by signal 15 (SIGTERM)", new ExitInfo(143, Instant.EPOCH).describe());
        assertEquals("exited with code 1", new ExitInfo(1, Instant.EPOCH).describe());
        assertTrue(new ExitInfo(0, Instant.EPOCH).succeeded());
    }
}
