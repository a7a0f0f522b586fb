package io.qvm.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code qvm bench}'s measurements on a host without {@code /proc} (macOS, Windows), simulated by
 * pointing {@link ProcFs} at an empty directory: each one that needs {@code /proc} is marked
 * "Linux only" in the JSON with what to use instead, the others are still measured.
 */
@Tag("unit")
class ProcFsTest {

    @TempDir
    Path tmp;

    private final long me = ProcessHandle.current().pid();

    @Test
    void withoutProcSmapsIsMarkedLinuxOnlyAndTheRunGoesOn() throws Exception {
        ProcFs none = ProcFs.at(tmp.resolve("no-proc"));
        assertFalse(none.available());
        ObjectNode j = Smaps.of(none, me).toJson();
        String why = j.path("unavailable").asText();
        assertTrue(why.startsWith("Linux only: QEMU's memory split"), why);
        assertTrue(why.contains("on macOS/Windows"), why);
        assertTrue(why.contains("vmmap --summary " + me), why);
        assertFalse(j.has("ownKiB"), "no made-up zeros: " + j);
        assertEquals(-1, j.path("PssKiB").asLong());
        // /bin/ps answers here as on a Mac: the RSS alone is still measured
        assertTrue(j.path("RssKiB").asLong() > 0, j.toString());
    }

    @Test
    void withoutProcMemAvailableIsMarkedNotMeasured() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        Bench.putMemAvailable(n, "memAvailableKiBWhileUp", ProcFs.at(tmp));
        assertTrue(n.path("memAvailableKiBWhileUp").isNull());
        assertTrue(n.path("memAvailableKiBWhileUpUnavailable").asText().startsWith("Linux only: the host's MemAvailable"),
                n.toString());
    }

    @Test
    void onThisLinuxEverythingIsMeasuredThroughTheSameSeam() throws Exception {
        ProcFs proc = ProcFs.system();
        assertTrue(proc.available());
        ObjectNode j = Smaps.of(proc, me).toJson();
        assertFalse(j.has("unavailable"), j.toString());
        assertTrue(j.path("PssKiB").asLong() > 0, j.toString());
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        Bench.putMemAvailable(n, "m", proc);
        assertTrue(n.path("m").asLong() > 0, n.toString());
    }

    @Test
    void cpuComesFromProcessHandleOnEveryHost() throws Exception {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        Bench.putCpuPercent(n, "cpu", me, Duration.ofMillis(200));
        assertTrue(n.path("cpu").isNumber(), n.toString());
        Bench.putCpuPercent(n, "gone", Long.MAX_VALUE - 1, Duration.ofMillis(1));
        assertTrue(n.path("gone").isNull());
        assertTrue(n.path("goneUnavailable").asText().contains("CPU time"), n.toString());
    }
}
