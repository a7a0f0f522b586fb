package io.qvm.backend.probe;

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
}
