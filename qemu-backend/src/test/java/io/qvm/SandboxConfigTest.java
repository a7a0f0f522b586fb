package io.qvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.function.Consumer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class SandboxConfigTest {

    @Test
    void defaultsAreTheDocumentedOnes() {
        SandboxConfig c = SandboxConfig.defaults();
        assertEquals(2, c.vcpus());
        assertEquals(1024, c.memoryMib());
        assertEquals(Duration.ofSeconds(180), c.bootTimeout());
        assertEquals(Duration.ofSeconds(60), c.requestTimeout());
        assertEquals(Accelerator.AUTO, c.accelerator());
        assertEquals(TransportPreference.AUTO, c.transport());
        assertEquals(32L << 20, c.maxRequestBytes());
        assertEquals(64L << 20, c.maxResponseBytes());
        assertEquals(50_000_000L, c.maxPixels());
        assertEquals(16384, c.maxSide());
        assertEquals(1000, c.maxPages());
        assertEquals(RunscPlatform.SYSTRAP, c.runscPlatform());
        assertEquals(64, c.guestTmpMib());
        assertEquals(Duration.ofSeconds(1), c.idlePause());
        assertEquals(Duration.ofSeconds(30), c.frameStallTimeout());
        assertEquals(SandboxConfig.builder().build(), c);
    }

    @Test
    void derivedValues() {
        SandboxConfig c = SandboxConfig.defaults();
        assertEquals(1024 - 384 - 64, c.workerHeapMib());
        assertEquals(2, c.workerCpus());
        SandboxConfig big = c.newBuilder().memoryMib(8192).guestTmpMib(512).vcpus(8).build();
        assertEquals(8192 - 384 - 512, big.workerHeapMib());
        assertEquals(8, big.workerCpus());
    }

    @Test
    void smallestMemoryThatLeavesTheMinimumHeap() {
        SandboxConfig c = SandboxConfig.builder().memoryMib(576).maxPixels(1).maxRequestBytes(1024)
                .maxResponseBytes(1024).build();
        assertEquals(SandboxConfig.MIN_WORKER_HEAP_MIB, c.workerHeapMib());
        InvalidConfigException e = assertThrows(InvalidConfigException.class,
                () -> SandboxConfig.builder().memoryMib(576).guestTmpMib(65).maxPixels(1).build());
        assertEquals("memoryMib", e.field());
        assertTrue(e.getMessage().contains("worker heap would be 127 MiB"), e.getMessage());
        assertTrue(e.getMessage().contains("at least 577"), e.getMessage());
    }

    @Test
    void newBuilderKeepsEveryValue() {
        SandboxConfig c = SandboxConfig.builder().vcpus(3).memoryMib(2048).bootTimeout(Duration.ofSeconds(5))
                .requestTimeout(Duration.ofMillis(250)).accelerator(Accelerator.TCG)
                .transport(TransportPreference.SERIAL).maxRequestBytes(4096).maxResponseBytes(8192).maxPixels(1000)
                .maxSide(100).maxPages(7).runscPlatform(RunscPlatform.PTRACE).guestTmpMib(128)
                .idlePause(Duration.ofSeconds(7)).frameStallTimeout(Duration.ofSeconds(9)).build();
        assertEquals(c, c.newBuilder().build());
        assertEquals(Duration.ofSeconds(9), c.newBuilder().build().frameStallTimeout());
        assertNotEquals(c, c.newBuilder().frameStallTimeout(Duration.ofSeconds(10)).build());
        assertTrue(c.toString().contains("frameStallTimeout=PT9S"), c::toString);
        assertEquals(Duration.ofSeconds(7), c.newBuilder().build().idlePause());
        assertNotEquals(c, c.newBuilder().idlePause(Duration.ZERO).build());
        assertEquals(c.hashCode(), c.newBuilder().build().hashCode());
        assertNotEquals(c, c.newBuilder().maxPages(8).build());
        assertTrue(c.toString().contains("runscPlatform=PTRACE"));
    }

    @Test
    void vcpusBounds() {
        bounds("vcpus", "1..64", b -> b.vcpus(1), b -> b.vcpus(64), b -> b.vcpus(0), b -> b.vcpus(65), "0", "65");
    }

    @Test
    void memoryBounds() {
        bounds("memoryMib", "576..65536", b -> b.memoryMib(576).maxPixels(1), b -> b.memoryMib(65536),
                b -> b.memoryMib(575), b -> b.memoryMib(65537), "575", "65537");
    }

    @Test
    void bootTimeoutBounds() {
        bounds("bootTimeout", "1 s..30 min", b -> b.bootTimeout(Duration.ofSeconds(1)),
                b -> b.bootTimeout(Duration.ofMinutes(30)), b -> b.bootTimeout(Duration.ofMillis(999)),
                b -> b.bootTimeout(Duration.ofMinutes(30).plusNanos(1)), "PT0.999S", "PT30M0.000000001S");
        assertRejected("bootTimeout", "null", b -> b.bootTimeout(null));
        assertRejected("bootTimeout", "PT-1S", b -> b.bootTimeout(Duration.ofSeconds(-1)));
    }

    @Test
    void frameStallTimeoutBounds() {
        bounds("frameStallTimeout", "1 s..30 min", b -> b.frameStallTimeout(Duration.ofSeconds(1)),
                b -> b.frameStallTimeout(Duration.ofMinutes(30)), b -> b.frameStallTimeout(Duration.ofMillis(999)),
                b -> b.frameStallTimeout(Duration.ofMinutes(30).plusMillis(1)), "PT0.999S", "PT30M0.001S");
        assertRejected("frameStallTimeout", "null", b -> b.frameStallTimeout(null));
        assertRejected("frameStallTimeout", "PT0S", b -> b.frameStallTimeout(Duration.ZERO));
    }

    @Test
    void requestTimeoutBounds() {
        bounds("requestTimeout", "100 ms..30 min", b -> b.requestTimeout(Duration.ofMillis(100)),
                b -> b.requestTimeout(Duration.ofMinutes(30)), b -> b.requestTimeout(Duration.ofMillis(99)),
                b -> b.requestTimeout(Duration.ofMinutes(31)), "PT0.099S", "PT31M");
    }

    @Test
    void idlePauseBounds() {
        bounds("idlePause", "100 ms..60 min", b -> b.idlePause(Duration.ofMillis(100)),
                b -> b.idlePause(Duration.ofHours(1)), b -> b.idlePause(Duration.ofMillis(99)),
                b -> b.idlePause(Duration.ofHours(1).plusMillis(1)), "PT0.099S", "PT1H0.001S");
        assertEquals(Duration.ZERO, SandboxConfig.builder().idlePause(Duration.ZERO).build().idlePause());
        assertRejected("idlePause", "null", b -> b.idlePause(null));
        assertRejected("idlePause", "PT-1S", b -> b.idlePause(Duration.ofSeconds(-1)));
    }

    @Test
    void messageByteBounds() {
        bounds("maxRequestBytes", "1024..268435456", b -> b.maxRequestBytes(1024),
                b -> b.maxRequestBytes(256L << 20).memoryMib(2048), b -> b.maxRequestBytes(1023),
                b -> b.maxRequestBytes((256L << 20) + 1), "1023", "268435457");
        bounds("maxResponseBytes", "1024..268435456", b -> b.maxResponseBytes(1024),
                b -> b.maxResponseBytes(256L << 20).memoryMib(2048), b -> b.maxResponseBytes(1023),
                b -> b.maxResponseBytes((256L << 20) + 1), "1023", "268435457");
    }

    @Test
    void rendererLimitBounds() {
        bounds("maxPixels", "1..400000000", b -> b.maxPixels(1), b -> b.maxPixels(400_000_000L).memoryMib(4096),
                b -> b.maxPixels(0), b -> b.maxPixels(400_000_001L), "0", "400000001");
        bounds("maxSide", "1..65535", b -> b.maxSide(1), b -> b.maxSide(65535), b -> b.maxSide(0),
                b -> b.maxSide(65536), "0", "65536");
        bounds("maxPages", "1..100000", b -> b.maxPages(1), b -> b.maxPages(100_000), b -> b.maxPages(0),
                b -> b.maxPages(100_001), "0", "100001");
    }

    @Test
    void guestTmpBounds() {
        bounds("guestTmpMib", "1..32768", b -> b.guestTmpMib(1), b -> b.guestTmpMib(32768).memoryMib(65536),
                b -> b.guestTmpMib(0), b -> b.guestTmpMib(32769), "0", "32769");
        SandboxConfig.builder().memoryMib(2048).guestTmpMib(1024).build();
        InvalidConfigException e = assertThrows(InvalidConfigException.class,
                () -> SandboxConfig.builder().memoryMib(2048).guestTmpMib(1025).build());
        assertEquals("guestTmpMib", e.field());
        assertEquals("1025", e.value());
        assertTrue(e.getMessage().contains("allowed 1..1024 MiB"), e.getMessage());
    }

    @Test
    void enumsRejectNull() {
        assertRejected("accelerator", "null", b -> b.accelerator(null));
        assertRejected("transport", "null", b -> b.transport(null));
        assertRejected("runscPlatform", "null", b -> b.runscPlatform(null));
    }

    @Test
    void workingSetMustFitTheHeap() {
        // 1024 MiB guest: heap 576 MiB. 120 M pixels * 4 B = 458 MiB + 32 + 64 = 554 MiB fits; 130 M does not.
        SandboxConfig.builder().maxPixels(120_000_000L).build();
        InvalidConfigException e = assertThrows(InvalidConfigException.class,
                () -> SandboxConfig.builder().maxPixels(130_000_000L).build());
        assertEquals("maxPixels", e.field());
        assertTrue(e.getMessage().contains("does not fit in the worker heap of 576 MiB"), e.getMessage());
        assertTrue(e.getMessage().contains("raise memoryMib"), e.getMessage());
    }

    @Test
    void setterFailsAtOnceNotAtBuild() {
        SandboxConfig.Builder b = SandboxConfig.builder();
        assertThrows(InvalidConfigException.class, () -> b.vcpus(-1));
        assertEquals(2, b.build().vcpus(), "a rejected value leaves the builder unchanged");
    }

    @Test
    void parseEnums() {
        assertEquals(Accelerator.KVM, Accelerator.parse(" KVM "));
        assertEquals(TransportPreference.VSOCK, TransportPreference.parse("vsock"));
        assertEquals(RunscPlatform.PTRACE, RunscPlatform.parse("ptrace"));
        assertEquals("ptrace", RunscPlatform.PTRACE.kernelValue());
        InvalidConfigException e = assertThrows(InvalidConfigException.class, () -> Accelerator.parse("xen"));
        assertEquals("accelerator = xen is invalid: allowed one of auto, kvm, hvf, whpx, tcg", e.getMessage());
        assertThrows(IllegalStateException.class, Accelerator.AUTO::qemuName);
        assertEquals("whpx", Accelerator.WHPX.qemuName());
    }

    private static void bounds(String field, String allowedFragment, Consumer<SandboxConfig.Builder> min,
            Consumer<SandboxConfig.Builder> max, Consumer<SandboxConfig.Builder> below,
            Consumer<SandboxConfig.Builder> above, String belowText, String aboveText) {
        SandboxConfig.Builder ok = SandboxConfig.builder();
        min.accept(ok);
        ok.build();
        SandboxConfig.Builder ok2 = SandboxConfig.builder();
        max.accept(ok2);
        ok2.build();
        InvalidConfigException lo = assertRejected(field, belowText, below);
        InvalidConfigException hi = assertRejected(field, aboveText, above);
        assertTrue(lo.getMessage().contains(allowedFragment), lo.getMessage());
        assertTrue(hi.getMessage().contains(allowedFragment), hi.getMessage());
    }

    private static InvalidConfigException assertRejected(String field, String value,
            Consumer<SandboxConfig.Builder> setter) {
        InvalidConfigException e = assertThrows(InvalidConfigException.class,
                () -> setter.accept(SandboxConfig.builder()));
        assertEquals(field, e.field());
        assertEquals(value, e.value());
        assertTrue(e.getMessage().startsWith(field + " = " + value + " is invalid: allowed "), e.getMessage());
        assertTrue(e instanceof IllegalArgumentException);
        return e;
    }
}
