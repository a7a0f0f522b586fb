package io.qvm.cli;

import io.qvm.admin.HostReport;
import io.qvm.protocol.image.Arch;

/** The exact commands that fix a missing prerequisite, per host OS. */
final class InstallHints {

    /** Where the Windows QEMU installers are published. */
    static final String WINDOWS_QEMU_URL = "https://qemu.weilnetz.de/w64/";

    private InstallHints() {
    }

    /** How to install {@code qemu-system-<guest>} on {@code os}. */
    static String qemu(HostReport.Os os, Arch guest) {
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

    /** How to (re)build the guest image on this host. */
    static String imageBuild(Arch arch) {
        return imageBuild(HostReport.Os.current(), arch);
    }

    /**
     * How to (re)build the guest image on {@code os} (adr/0010: the build needs a JDK and the
     * archive's URLs, no apt or dpkg), or get the released one (adr/0011).
     */
    static String imageBuild(HostReport.Os os, Arch arch) {
        String build = "./qvm image build --arch " + arch.qemuName();
        String mirrors = "QVM_DEBIAN_MIRROR and QVM_DEBIAN_SECURITY_MIRROR (a Debian archive and its security archive)";
        String how = switch (os) {
            case LINUX -> "build the guest image: " + build + " (pinned Debian packages from the host's apt sources, or from "
                    + mirrors + " on a host without them)";
            case MACOS -> "build the guest image: set " + mirrors + ", then " + build + " (no apt or dpkg needed)";
            case WINDOWS -> "build the guest image inside WSL (" + build + ", with " + mirrors + " set where WSL has no apt "
                    + "sources) and point QVM_IMAGE_DIR at its out\\image";
            default -> "build the guest image: set " + mirrors + ", then " + build;
        };
        return how + "; a released qvm fetches the image its jar pins instead: set QVM_IMAGE_REPOSITORY to the "
                + "Maven repository it was deployed to";
    }
}
