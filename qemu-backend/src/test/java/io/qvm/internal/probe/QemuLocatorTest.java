package io.qvm.internal.probe;

import io.qvm.internal.host.HostOs;
import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class QemuLocatorTest {

    @Test
    void overrideDirectoryComesFirstThenPathThenInstallDirs() {
        QemuLocator l = new QemuLocator(HostOs.LINUX, Map.of("QVM_QEMU", "/opt/qemu/bin", "PATH", "/a:/b"), p -> true);
        assertEquals(List.of(Path.of("/opt/qemu/bin/qemu-system-x86_64"), Path.of("/a/qemu-system-x86_64"),
                Path.of("/b/qemu-system-x86_64"), Path.of("/usr/bin/qemu-system-x86_64"),
                Path.of("/usr/local/bin/qemu-system-x86_64")), l.candidates(Arch.X86_64));
    }

    @Test
    void overrideNamingOneBinaryServesItsSiblingsToo() {
        QemuLocator l = new QemuLocator(HostOs.LINUX, Map.of("QVM_QEMU", "/x/qemu-system-x86_64"), p -> true);
        assertEquals(Path.of("/x/qemu-system-x86_64"), l.candidates(Arch.X86_64).get(0));
        assertEquals(Path.of("/x/qemu-system-aarch64"), l.candidates(Arch.AARCH64).get(0));
    }

    @Test
    void macosFallsBackToHomebrew() {
        Set<Path> present = Set.of(Path.of("/opt/homebrew/bin/qemu-system-aarch64"));
        QemuLocator l = new QemuLocator(HostOs.MACOS, Map.of("PATH", "/usr/bin:/bin"), present::contains);
        assertEquals(Optional.of(Path.of("/opt/homebrew/bin/qemu-system-aarch64")), l.locate(Arch.AARCH64));
        assertEquals(Optional.empty(), l.locate(Arch.X86_64));
        assertTrue(l.candidates(Arch.X86_64).contains(Path.of("/usr/local/bin/qemu-system-x86_64")));
    }

    @Test
    void windowsUsesExeAndProgramFiles() {
        QemuLocator l = new QemuLocator(HostOs.WINDOWS, Map.of("Path", "C:\\Windows;C:\\tools"), p -> false);
        List<Path> c = l.candidates(Arch.X86_64);
        assertEquals("qemu-system-x86_64.exe", l.binaryName(Arch.X86_64));
        assertEquals(Path.of("C:\\Program Files\\qemu").resolve("qemu-system-x86_64.exe"), c.get(c.size() - 1));
        assertEquals(3, c.size());
    }

    @Test
    void installHintsNameThePackage() {
        assertTrue(QemuLocator.installHint(HostOs.LINUX, Arch.X86_64).contains("apt-get install qemu-system-x86"));
        assertTrue(QemuLocator.installHint(HostOs.LINUX, Arch.AARCH64).contains("apt-get install qemu-system-arm"));
        assertTrue(QemuLocator.installHint(HostOs.MACOS, Arch.AARCH64).contains("brew install qemu"));
    }
}
