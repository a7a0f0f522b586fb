package io.qvm.protocol.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.qvm.protocol.image.InitEvents.Event;
import io.qvm.protocol.image.InitEvents.Phase;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;

/**
 * {@link InitEvents#parse} on any line (the bytes the host reads from the events port, decoded as
 * {@code GuestWatcher} decodes them): never an exception, and an event only when the line is
 * exactly one of the contract's forms, with its fields in range. Kept inputs (valid lines and
 * near misses) are in {@code InitEventsFuzzTestInputs/}.
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class InitEventsFuzzTest {

    private static final Pattern UPTIME_TEXT = Pattern.compile("[0-9]{1,9}(\\.[0-9]{1,9})?");
    private static final Pattern STATUS_TEXT = Pattern.compile("[0-9]{1,3}");

    @FuzzTest(maxDuration = "10s")
    void aLineIsOneEventOfTheContractOrNone(byte[] bytes) {
        String line = new String(bytes, StandardCharsets.UTF_8);
        Optional<Event> parsed = InitEvents.parse(line);
        if (parsed.isEmpty()) {
            return;
        }
        Event e = parsed.get();
        assertTrue(line.length() <= InitEvents.MAX_LINE, "an event line is at most MAX_LINE long");
        assertTrue(e.phase().isPresent() != e.error().isPresent(), "a phase or an error, never both: " + e);
        if (e.error().isPresent()) {
            String text = e.error().get();
            assertTrue(line.startsWith(InitEvents.ERROR), line);
            assertEquals(line.substring(InitEvents.ERROR.length()).strip(), text, "the text exactly as written");
            assertTrue(text.chars().noneMatch(c -> c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029),
                    "no line break inside an error: " + text);
            assertEquals(Optional.empty(), e.status());
            return;
        }
        Phase p = e.phase().get();
        assertEquals(p == Phase.WORKER_EXIT, e.status().isPresent(), "a status exactly on worker-exit: " + e);
        int uptimeAt = line.lastIndexOf(" " + InitEvents.UPTIME);
        assertTrue(uptimeAt > 0, line);
        String uptime = line.substring(uptimeAt + 1 + InitEvents.UPTIME.length());
        assertTrue(UPTIME_TEXT.matcher(uptime).matches(), "uptime as the contract writes it: " + line);
        assertEquals(nanos(uptime), e.uptimeNanos(), line);
        String status = "";
        if (e.status().isPresent()) {
            int s = e.status().get();
            assertTrue(s >= 0 && s <= 255, "status in 0..255: " + s);
            String given = line.substring((InitEvents.PHASE + p.id() + " " + InitEvents.STATUS).length(), uptimeAt);
            assertTrue(STATUS_TEXT.matcher(given).matches(), line);
            assertEquals(s, Integer.parseInt(given), line);
            status = " " + InitEvents.STATUS + given;
        }
        assertEquals(InitEvents.PHASE + p.id() + status + " " + InitEvents.UPTIME + uptime, line,
                "nothing but the contract's fields");
        assertFalse(line.contains("\n"), line);
    }

    /** The reference reading of an uptime: whole seconds and up to 9 decimals, in nanoseconds. */
    private static long nanos(String seconds) {
        String[] parts = seconds.split("\\.", -1);
        long nanos = Long.parseLong(parts[0]) * 1_000_000_000L;
        if (parts.length == 2) {
            nanos += Long.parseLong(parts[1]) * (long) Math.pow(10, 9 - parts[1].length());
        }
        return nanos;
    }
}
