package io.qvm.internal.host;

import io.qvm.protocol.image.Arch;
import java.util.Locale;

/** The host operating system family, as far as QEMU and its accelerators care. */
public enum HostOs {
    LINUX,
    MACOS,
    WINDOWS,
    OTHER;

    /** Maps Java's {@code os.name} ("Linux", "Mac OS X", "Windows 11", …). */
    public static HostOs fromOsName(String osName) {
        String n = osName == null ? "" : osName.toLowerCase(Locale.ROOT);
        if (n.startsWith("linux")) {
            return LINUX;
        }
        if (n.startsWith("mac") || n.startsWith("darwin")) {
            return MACOS;
        }
        if (n.startsWith("windows")) {
            return WINDOWS;
        }
        return OTHER;
    }

    /** How to install {@code qemu-system-<guest>} on this OS. */
    public String qemuInstallHint(Arch guest) {
        switch (this) {
            case LINUX:
                return guest == Arch.X86_64
                        ? "install qemu-system-x86 (Debian/Ubuntu: apt-get install qemu-system-x86; Fedora: dnf install qemu-system-x86-core)"
                        : "install qemu-system-arm (Debian/Ubuntu: apt-get install qemu-system-arm; Fedora: dnf install qemu-system-aarch64-core)";
            case MACOS:
                return "install QEMU with Homebrew (brew install qemu) or set QVM_QEMU to its directory";
            case WINDOWS:
                return "install QEMU for Windows into C:\\Program Files\\qemu or set QVM_QEMU to its directory";
            default:
                return "install QEMU and set QVM_QEMU to the directory holding qemu-system-" + guest.qemuName();
        }
    }
}
