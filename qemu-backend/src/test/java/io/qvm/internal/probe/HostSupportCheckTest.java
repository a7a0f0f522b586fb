package io.qvm.internal.probe;

import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;

import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class HostSupportCheckTest {

    @TempDir
    Path dir;

    private static HostInfo host(HostOs os, Arch arch) {
        return new HostInfo(os, arch, Map.of());
    }

    private static final CommandRunner NO_COMMANDS = (argv, d) -> {
        throw new AssertionError("no command expected: " + argv);
    };

    @Test
    void kvmNeedsTheDevice() {
        HostSupportCheck c = new HostSupportCheck(dir.resolve("kvm"), dir, NO_COMMANDS);
        LayerVerdict v = c.check(Accelerator.KVM, host(HostOs.LINUX, Arch.X86_64), Arch.X86_64);
        assertFalse(v.passed());
        assertEquals(Layer.HOST_SUPPORT, v.layer());
        assertTrue(v.reason().endsWith("kvm does not exist"), v.reason());
        assertTrue(v.fix().contains("modprobe kvm_intel"), v.fix());
    }

    @Test
    void kvmReadWriteDevicePasses() throws IOException {
        Path kvm = Files.createFile(dir.resolve("kvm"));
        HostSupportCheck c = new HostSupportCheck(kvm, dir, NO_COMMANDS);
        assertTrue(c.check(Accelerator.KVM, host(HostOs.LINUX, Arch.X86_64), Arch.X86_64).passed());
    }

    @Test
    void kvmWithoutPermissionSaysJoinTheGroup() throws IOException {
        Assumptions.assumeFalse("root".equals(System.getProperty("user.name")),
                "root can read and write any device file, so permissions cannot be tested as root");
        Path kvm = Files.createFile(dir.resolve("kvm"));
        Files.setPosixFilePermissions(kvm, PosixFilePermissions.fromString("r--------"));
        LayerVerdict v = new HostSupportCheck(kvm, dir, NO_COMMANDS)
                .check(Accelerator.KVM, host(HostOs.LINUX, Arch.X86_64), Arch.X86_64);
        assertFalse(v.passed());
        assertEquals(HostSupportCheck.FIX_KVM_GROUP, v.fix());
    }

    @Test
    void hardwareAcceleratorsRunOnlyTheHostsArchitecture() throws IOException {
        Path kvm = Files.createFile(dir.resolve("kvm"));
        LayerVerdict v = new HostSupportCheck(kvm, dir, NO_COMMANDS)
                .check(Accelerator.KVM, host(HostOs.LINUX, Arch.X86_64), Arch.AARCH64);
        assertFalse(v.passed());
        assertTrue(v.fix().contains("TCG"), v.fix());
    }

    @Test
    void kvmOffLinuxFails() {
        LayerVerdict v = new HostSupportCheck(dir.resolve("kvm"), dir, NO_COMMANDS)
                .check(Accelerator.KVM, host(HostOs.MACOS, Arch.AARCH64), Arch.AARCH64);
        assertFalse(v.passed());
        assertTrue(v.fix().contains("HVF"), v.fix());
    }

    @Test
    void hvfReadsSysctl() {
        CommandRunner one = (argv, d) -> {
            assertEquals("/usr/sbin/sysctl -n kern.hv_support", String.join(" ", argv));
            return new CommandRunner.Result(0, "1\n", "", false);
        };
        CommandRunner zero = (argv, d) -> new CommandRunner.Result(0, "0\n", "", false);
        HostInfo mac = host(HostOs.MACOS, Arch.AARCH64);
        assertTrue(new HostSupportCheck(dir, dir, one).check(Accelerator.HVF, mac, Arch.AARCH64).passed());
        LayerVerdict v = new HostSupportCheck(dir, dir, zero).check(Accelerator.HVF, mac, Arch.AARCH64);
        assertFalse(v.passed());
        assertTrue(v.reason().contains("kern.hv_support = '0'"), v.reason());
    }

    @Test
    void whpxLooksForTheHypervisorPlatformDll() throws IOException {
        HostInfo win = host(HostOs.WINDOWS, Arch.X86_64);
        LayerVerdict missing = new HostSupportCheck(dir, dir, NO_COMMANDS).check(Accelerator.WHPX, win, Arch.X86_64);
        assertFalse(missing.passed());
        assertTrue(missing.fix().contains("enable Windows Hypervisor Platform"), missing.fix());
        Files.createFile(dir.resolve("WinHvPlatform.dll"));
        assertTrue(new HostSupportCheck(dir, dir, NO_COMMANDS).check(Accelerator.WHPX, win, Arch.X86_64).passed());
    }

    @Test
    void tcgAlwaysPasses() {
        assertTrue(new HostSupportCheck(dir, dir, NO_COMMANDS)
                .check(Accelerator.TCG, host(HostOs.OTHER, Arch.AARCH64), Arch.X86_64).passed());
    }
}
