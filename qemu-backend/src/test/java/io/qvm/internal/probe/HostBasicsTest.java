package io.qvm.internal.probe;

import io.qvm.internal.host.QemuVersion;
import io.qvm.internal.host.HostOs;

import io.qvm.protocol.image.Arch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import java.util.EnumSet;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class HostBasicsTest {

    @Test
    void osNames() {
        assertEquals(HostOs.LINUX, HostOs.fromOsName("Linux"));
        assertEquals(HostOs.MACOS, HostOs.fromOsName("Mac OS X"));
        assertEquals(HostOs.WINDOWS, HostOs.fromOsName("Windows 11"));
        assertEquals(HostOs.OTHER, HostOs.fromOsName("FreeBSD"));
        assertEquals(HostOs.OTHER, HostOs.fromOsName(null));
    }

    @Test
    void archNames() {
        assertEquals(Optional.of(Arch.X86_64), Arch.fromOsArch("amd64"));
        assertEquals(Optional.of(Arch.X86_64), Arch.fromOsArch("x86_64"));
        assertEquals(Optional.of(Arch.AARCH64), Arch.fromOsArch("aarch64"));
        assertEquals(Optional.of(Arch.AARCH64), Arch.fromOsArch("arm64"));
        assertEquals(Optional.empty(), Arch.fromOsArch("ppc64le"));
        assertEquals("x86_64", Arch.X86_64.qemuName());
    }

    @Test
    void versionParsesDebianAndUpstreamOutput() {
        assertEquals(new QemuVersion(7, 2, 22), QemuVersion.parse(
                "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright (c) 2003-2022 Fabrice Bellard"));
        assertEquals(new QemuVersion(9, 1, 0), QemuVersion.parse("QEMU emulator version 9.1.0\n"));
        assertEquals(new QemuVersion(8, 0, 0), QemuVersion.parse("QEMU emulator version 8.0 (v8.0.0-dirty)"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> QemuVersion.parse("hello"));
        assertTrue(e.getMessage().contains("'hello'"));
    }

    @Test
    void versionOrder() {
        assertTrue(QemuVersion.of("7.2.22").compareTo(QemuVersion.of("7.10.0")) < 0);
        assertTrue(QemuVersion.of("10.0.0").compareTo(QemuVersion.of("9.2.3")) > 0);
        assertTrue(QemuVersion.of("7.1.0").atLeast(7, 1));
        assertTrue(!QemuVersion.of("7.0.9").atLeast(7, 1));
        assertEquals("6.2.0", QemuVersion.of("6.2").toString());
    }

    @Test
    void accelHelpParsing() {
        String debianX86 = "Accelerators supported in QEMU binary:\ntcg\nkvm\n";
        assertEquals(EnumSet.of(Accelerator.TCG, Accelerator.KVM), CompiledInCheck.parseAccelHelp(debianX86));
        assertEquals(EnumSet.of(Accelerator.TCG),
                CompiledInCheck.parseAccelHelp("Accelerators supported in QEMU binary:\ntcg\n"));
        assertEquals(EnumSet.of(Accelerator.TCG, Accelerator.HVF),
                CompiledInCheck.parseAccelHelp("Accelerators supported in QEMU binary:\r\ntcg\r\nhvf\r\nqtest\r\n"));
        assertEquals(EnumSet.of(Accelerator.WHPX, Accelerator.TCG),
                CompiledInCheck.parseAccelHelp("Accelerators supported in QEMU binary:\nwhpx\ntcg\nxen\n"));
        assertTrue(CompiledInCheck.parseAccelHelp(null).isEmpty());
    }
}
