package io.qvm.internal.probe;

import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.QemuVersion;
import io.qvm.internal.qemu.MachineProfile;
import io.qvm.internal.qemu.QemuCommand;
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
@Tag("unit")
class FunctionalCheckTest {

    @TempDir
    Path dir;

    /** This host as probed, when it has a QEMU for its own architecture (else the test is skipped). */
    static HostInfo realHost() {
        HostInfo h = HostProbe.system().probe();
        Assumptions.assumeTrue(h.qemu(h.arch()).isPresent(), "no QEMU for the host architecture");
        return h;
    }

    /**
     * A probe boots the kernel with the words qvm's own guests get (console, panic=-1, the
     * machine's words): under TCG that includes highres=off, so the probe's boot takes what a
     * sandbox's does, not the slower boot with high-resolution timers.
     */
    @Test
    void aKernelProbeBootsWithTheMachinesOwnKernelWords() {
        ProbeGuest guest = new ProbeGuest.KernelGuest(Path.of("/k/vmlinuz"), Optional.of(Path.of("/k/initrd")));
        for (Accelerator a : List.of(Accelerator.TCG, Accelerator.KVM)) {
            MachineProfile p = MachineProfile.select(HostOs.LINUX, Arch.X86_64, Arch.X86_64, a, QemuVersion.of("10.0.2"));
            List<String> argv = guest.qemuArgs(p, Arch.X86_64, dir);
            String append = argv.get(argv.indexOf("-append") + 1);
            assertEquals(QemuCommand.kernelBase(p), append, a.toString());
            assertTrue(append.startsWith("console=ttyS0 panic=-1"), append);
            assertEquals(a == Accelerator.TCG, List.of(append.split(" ")).contains(MachineProfile.TCG_TIMERS), a + ": " + append);
        }
        MachineProfile arm = MachineProfile.select(HostOs.LINUX, Arch.X86_64, Arch.AARCH64, Accelerator.TCG, QemuVersion.of("10.0.2"));
        List<String> argv = guest.qemuArgs(arm, Arch.AARCH64, dir);
        assertEquals("console=ttyAMA0 panic=-1 " + MachineProfile.TCG_TIMERS, argv.get(argv.indexOf("-append") + 1));
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
    @Tag("qemu")
    void bootSectorReachesItsMarkerUnderTcg() {
        HostInfo h = realHost();
        FunctionalCheck c = new FunctionalCheck(new ProbeGuest.BootSectorGuest(), Duration.ofSeconds(20),
                Duration.ofSeconds(30), null);
        LayerVerdict v = c.check(Accelerator.TCG, h, h.arch());
        assertTrue(v.passed(), v.toString());
        assertTrue(v.reason().contains("guest printed 'QVM-PROBE-OK'"), v.reason());
    }

    @Test
    @Tag("qemu")
    @Tag("security")
    void asRootTheProbeQemuDropsToTheUnprivilegedUserAndStillBoots() {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.qvm.internal.host.Posix.currentUid() == 0,
                "only a root test can have QEMU drop to another user");
        HostInfo h = realHost();
        LayerVerdict v = new FunctionalCheck(new ProbeGuest.BootSectorGuest(), Duration.ofSeconds(20),
                Duration.ofSeconds(30), null, Optional.of("nobody")).check(Accelerator.TCG, h, h.arch());
        assertTrue(v.passed(), v.toString());
    }

    @Test
    @Tag("qemu")
    void aarch64ProgramReachesItsMarkerUnderTcg() {
        HostInfo h = HostProbe.system().probe();
        Assumptions.assumeTrue(h.qemu(Arch.AARCH64).isPresent(), "no qemu-system-aarch64");
        LayerVerdict v = new FunctionalCheck(new ProbeGuest.BootSectorGuest(), Duration.ofSeconds(20),
                Duration.ofSeconds(30), null).check(Accelerator.TCG, h, Arch.AARCH64);
        assertTrue(v.passed(), v.toString());
    }

    @Test
    @Tag("qemu")
    void aGuestThatNeverPrintsTheMarkerIsKilledAtTheDeadline() throws Exception {
        HostInfo h = realHost();
        Assumptions.assumeTrue(h.arch() == Arch.X86_64);
        Path qemu = h.qemu(Arch.X86_64).orElseThrow().binary();
        Duration deadline = Duration.ofSeconds(2);
        // SeaBIOS with no boot device retries forever.
        FunctionalCheck.Run r = FunctionalCheck.run(List.of(qemu.toString(), "-M", "pc", "-accel", "tcg", "-nodefaults",
                "-no-user-config", "-display", "none", "-serial", "stdio", "-m", "16"), List.of("never"), deadline);
        assertEquals(FunctionalCheck.Outcome.TIMEOUT, r.outcome());
        List<ProcessHandle> left = ProcessHandle.current().children()
                .filter(c -> c.info().command().orElse("").contains("qemu-system")).toList();
        assertEquals(List.of(), left, "the QEMU of the run is killed and reaped before run() returns");
    }

    @Test
    @Tag("qemu")
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
    @Tag("qemu")
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
    @Tag("qemu")
    void aFailedTcgProbeIsNotCached() throws Exception {
        HostInfo h = realHost();
        // Not a kernel: too short to hold a boot header, so QEMU refuses it at once ("invalid kernel
        // header") and the TCG probe fails. (4 KiB of zeros passed for an old zImage on x86 and ran
        // until each probe's 30 s deadline.)
        Path bogus = dir.resolve("not-a-kernel");
        java.nio.file.Files.write(bogus, new byte[100]);
        ProbeCache cache = new ProbeCache(dir.resolve("probe-cache.json"), Duration.ofDays(1), Clock.systemUTC());
        FunctionalCheck c = new FunctionalCheck(new ProbeGuest.KernelGuest(bogus, Optional.empty()),
                Duration.ofSeconds(20), Duration.ofSeconds(30), cache);
        LayerVerdict first = c.check(Accelerator.TCG, h, h.arch());
        assertFalse(first.passed(), first.toString());
        LayerVerdict second = c.check(Accelerator.TCG, h, h.arch());
        assertFalse(second.cached(), "a TCG failure (slow or broken for a moment) must be probed again: " + second);
    }
}
