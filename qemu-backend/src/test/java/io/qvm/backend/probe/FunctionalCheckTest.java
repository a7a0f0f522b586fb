package io.qvm.backend.probe;

import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.Accelerator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Boots real QEMU; skipped where QEMU is missing. */
class FunctionalCheckTest {

    @TempDir
    Path dir;

    private static HostInfo realHost() {
        HostInfo h = HostProbe.system().probe();
        Assumptions.assumeTrue(h.qemu(h.arch()).isPresent(), "no QEMU for the host architecture");
        return h;
    }

    @Test
    void bootSectorBytes() {
        byte[] x86 = ProbeGuest.BootSectorGuest.x86BootSector();
        assertEquals(512, x86.length);
        assertEquals((byte) 0x55, x86[510]);
        assertEquals((byte) 0xAA, x86[511]);
        String text = new String(x86, StandardCharsets.ISO_8859_1);
        int msg = text.indexOf("QVM-PROBE-OK\r\n");
        assertTrue(msg > 0);
        int si = (x86[10] & 0xFF) | (x86[11] & 0xFF) << 8;
        assertEquals(0x7C00 + msg, si, "mov si points at the message");
        byte[] a64 = ProbeGuest.BootSectorGuest.aarch64Program();
        assertEquals(0, a64.length % 4);
        int first = (a64[0] & 0xFF) | (a64[1] & 0xFF) << 8 | (a64[2] & 0xFF) << 16 | (a64[3] & 0xFF) << 24;
        assertEquals(0xD2A12000, first, "movz x0, #0x0900, lsl #16");
    }

    @Test
    void bootSectorReachesItsMarkerUnderTcg() {
        HostInfo h = realHost();
        FunctionalCheck c = new FunctionalCheck(new ProbeGuest.BootSectorGuest(), Duration.ofSeconds(20),
                Duration.ofSeconds(30), null);
        LayerVerdict v = c.check(Accelerator.TCG, h, h.arch());
        assertTrue(v.passed(), v.toString());
        assertTrue(v.reason().contains("guest printed 'QVM-PROBE-OK'"), v.reason());
    }

    @Test
    void aarch64ProgramReachesItsMarkerUnderTcg() {
        HostInfo h = HostProbe.system().probe();
        Assumptions.assumeTrue(h.qemu(Arch.AARCH64).isPresent(), "no qemu-system-aarch64");
        LayerVerdict v = new FunctionalCheck(new ProbeGuest.BootSectorGuest(), Duration.ofSeconds(20),
                Duration.ofSeconds(30), null).check(Accelerator.TCG, h, Arch.AARCH64);
        assertTrue(v.passed(), v.toString());
    }

    @Test
    void aGuestThatNeverPrintsTheMarkerIsKilledAtTheDeadline() throws Exception {
        HostInfo h = realHost();
        Assumptions.assumeTrue(h.arch() == Arch.X86_64);
        Path qemu = h.qemu(Arch.X86_64).orElseThrow().binary();
        long t0 = System.nanoTime();
        // SeaBIOS with no boot device retries forever.
        FunctionalCheck.Run r = FunctionalCheck.run(List.of(qemu.toString(), "-M", "pc", "-accel", "tcg", "-nodefaults",
                "-no-user-config", "-display", "none", "-serial", "stdio", "-m", "16"), List.of("never"),
                Duration.ofSeconds(2));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(FunctionalCheck.Outcome.TIMEOUT, r.outcome());
        assertTrue(ms < 10_000, "returned after " + ms + " ms");
    }

    @Test
    void qemuThatExitsEarlyIsReportedWithItsOutput() throws Exception {
        HostInfo h = realHost();
        Path qemu = h.qemu(h.arch()).orElseThrow().binary();
        FunctionalCheck.Run r = FunctionalCheck.run(List.of(qemu.toString(), "-M", "no-such-machine"), List.of("never-printed"),
                Duration.ofSeconds(10));
        assertEquals(FunctionalCheck.Outcome.EXITED, r.outcome());
        assertTrue(r.tail().contains("unsupported machine type"), r.tail());
        assertEquals(1, r.exitCode());
    }

    @Test
    void verdictsAreCachedPerKey() {
        HostInfo h = realHost();
        ProbeCache cache = new ProbeCache(dir.resolve("probe-cache.json"), Duration.ofDays(1), Clock.systemUTC());
        FunctionalCheck c = new FunctionalCheck(new ProbeGuest.BootSectorGuest(), Duration.ofSeconds(20),
                Duration.ofSeconds(30), cache);
        LayerVerdict first = c.check(Accelerator.TCG, h, h.arch());
        LayerVerdict second = c.check(Accelerator.TCG, h, h.arch());
        assertFalse(first.cached());
        assertTrue(second.cached());
        assertEquals(first.passed(), second.passed());
    }

    @Test
    void aFailedTcgProbeIsNotCached() throws Exception {
        HostInfo h = realHost();
        // Not a kernel: QEMU refuses it at once, so the TCG probe fails.
        Path bogus = dir.resolve("not-a-kernel");
        java.nio.file.Files.write(bogus, new byte[4096]);
        ProbeCache cache = new ProbeCache(dir.resolve("probe-cache.json"), Duration.ofDays(1), Clock.systemUTC());
        FunctionalCheck c = new FunctionalCheck(new ProbeGuest.KernelGuest(bogus, Optional.empty()),
                Duration.ofSeconds(20), Duration.ofSeconds(30), cache);
        LayerVerdict first = c.check(Accelerator.TCG, h, h.arch());
        assertFalse(first.passed(), first.toString());
        LayerVerdict second = c.check(Accelerator.TCG, h, h.arch());
        assertFalse(second.cached(), "a TCG failure (slow or broken for a moment) must be probed again: " + second);
    }

    /**
     * The selection this host really makes, with the image kernel. On the project's build
     * machines (nested virtualization) KVM must come out unusable and AUTO must fall back to TCG
     * with a warning; on a host where KVM works, KVM must be chosen. Either way the outcome must be
     * consistent with the functional verdict.
     */
    @Test
    @Tag("e2e")
    void autoOnThisHostWithARealKernel() {
        HostInfo h = realHost();
        Optional<Path> kernel = TestImages.x86Kernel();
        Assumptions.assumeTrue(kernel.isPresent() && h.arch() == Arch.X86_64,
                "no x86_64 kernel (set QVM_TEST_KERNEL or build out/image/x86_64)");
        AcceleratorSelector s = AcceleratorSelector.builder().kernel(kernel.get()).useCache(false)
                .hardwareDeadline(Duration.ofSeconds(20)).build();
        AcceleratorChoice c = s.select(Accelerator.AUTO, h);
        c.verdicts().forEach(v -> System.out.println("verdict: " + v));
        c.warning().ifPresent(w -> System.out.println("warning: " + w));
        LayerVerdict kvmLast = c.verdicts().stream().filter(v -> v.accelerator() == Accelerator.KVM)
                .reduce((a, b) -> b).orElseThrow();
        if (kvmLast.passed()) {
            assertEquals(Accelerator.KVM, c.accelerator());
        } else {
            assertEquals(Accelerator.TCG, c.accelerator());
            assertTrue(c.fellBack());
            assertTrue(c.warning().orElseThrow().contains("kvm is not usable"));
            HostSetupException e = assertThrows(HostSetupException.class,
                    () -> s.select(Accelerator.KVM, h));
            assertEquals(HostSetupException.Problem.ACCELERATOR_UNAVAILABLE, e.problem());
            assertTrue(e.getMessage().contains("layer '" + kvmLast.layer().label() + "' failed"), e.getMessage());
        }
    }
}
