package io.qvm.cli;

import io.qvm.protocol.image.Arch;
import io.qvm.backend.probe.HostOs;

/** The exact commands that fix a missing prerequisite, per host OS. */
final class InstallHints {

    /** Where the Windows QEMU installers are published. */
    static final String WINDOWS_QEMU_URL = "https://qemu.weilnetz.de/w64/";

    private InstallHints() {
    }

    /** How to install {@code qemu-system-<guest>} on {@code os}. */
    static String qemu(HostOs os, Arch guest) {
        String debianPackage = guest == Arch.X86_64 ? "qemu-system-x86" : "qemu-system-arm";
        switch (os) {
            case LINUX:
                return "install QEMU: sudo apt-get install -y " + debianPackage + " (Debian/Ubuntu; Fedora: sudo dnf install "
                        + (guest == Arch.X86_64 ? "qemu-system-x86-core" : "qemu-system-aarch64-core")
                        + "), or set QVM_QEMU to the directory holding qemu-system-" + guest.qemuName();
            case MACOS:
                return "install QEMU: brew install qemu (or set QVM_QEMU to the directory holding qemu-system-"
                        + guest.qemuName() + ")";
            case WINDOWS:
                return "install QEMU with the installer from " + WINDOWS_QEMU_URL
                        + " into C:\\Program Files\\qemu (or set QVM_QEMU to its directory)";
            default:
                return "install QEMU and set QVM_QEMU to the directory holding qemu-system-" + guest.qemuName();
        }
    }

    /** How to (re)build the guest image. */
    static String imageBuild(Arch arch) {
        return "build the guest image: ./qvm image build --arch " + arch.qemuName();
    }
}
