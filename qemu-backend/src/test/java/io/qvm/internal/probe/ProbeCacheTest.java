package io.qvm.internal.probe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.Accelerator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class ProbeCacheTest {

    @TempDir
    Path dir;

    @Test
    void roundTripsAVerdict() {
        ProbeCache cache = new ProbeCache(dir.resolve("sub/probe-cache.json"), Duration.ofDays(7), Clock.systemUTC());
        assertTrue(cache.get("k").isEmpty());
        cache.put("k", LayerVerdict.fail(Accelerator.KVM, Layer.FUNCTIONAL, "hung", "use TCG"));
        LayerVerdict v = cache.get("k").orElseThrow();
        assertFalse(v.passed());
        assertTrue(v.cached());
        assertEquals(Accelerator.KVM, v.accelerator());
        assertTrue(v.reason().startsWith("hung (probed "), v.reason());
        assertEquals("use TCG", v.fix());
        assertTrue(cache.get("other").isEmpty());
    }

    @Test
    void oldEntriesAreIgnored() {
        Path f = dir.resolve("probe-cache.json");
        Instant t0 = Instant.parse("2026-11-01T00:00:00Z");
        new ProbeCache(f, Duration.ofDays(7), Clock.fixed(t0, ZoneOffset.UTC))
                .put("k", LayerVerdict.pass(Accelerator.TCG, Layer.FUNCTIONAL, "ok"));
        assertTrue(new ProbeCache(f, Duration.ofDays(7), Clock.fixed(t0.plus(Duration.ofDays(6)), ZoneOffset.UTC))
                .get("k").isPresent());
        assertTrue(new ProbeCache(f, Duration.ofDays(7), Clock.fixed(t0.plus(Duration.ofDays(8)), ZoneOffset.UTC))
                .get("k").isEmpty());
    }

    @Test
    void corruptFileIsTreatedAsEmptyAndRewritten() throws IOException {
        Path f = dir.resolve("probe-cache.json");
        Files.writeString(f, "{not json");
        ProbeCache cache = new ProbeCache(f, Duration.ofDays(7), Clock.systemUTC());
        assertTrue(cache.get("k").isEmpty());
        cache.put("k", LayerVerdict.pass(Accelerator.TCG, Layer.FUNCTIONAL, "ok"));
        assertTrue(cache.get("k").orElseThrow().passed());
        assertTrue(Files.readString(f).contains("\"version\" : 1"));
    }

    @Test
    void defaultLocationHonoursQvmCache() {
        assertEquals(dir.resolve("probe-cache.json"),
                ProbeCache.defaultLocation(Map.of("QVM_CACHE", dir.toString())).file());
        assertTrue(ProbeCache.defaultLocation(Map.of()).file().endsWith(Path.of(".cache", "qvm", "probe-cache.json")));
    }
}
