package io.qvm.backend.probe;

import java.util.Locale;
import java.util.Optional;

/** A CPU architecture qvm runs on (host) or boots (guest). */
public enum Arch {
    X86_64("x86_64"),
    AARCH64("aarch64");

    private final String qemuName;

    Arch(String qemuName) {
        this.qemuName = qemuName;
    }

    /** The name in {@code qemu-system-NAME}, in image directories ({@code out/image/NAME}) and in Debian's kernel names. */
    public String qemuName() {
        return qemuName;
    }

    /**
     * Normalises Java's {@code os.arch}: {@code amd64}, {@code x86_64}, {@code x64} → X86_64;
     * {@code aarch64}, {@code arm64} → AARCH64; anything else → empty.
     */
    public static Optional<Arch> fromOsArch(String osArch) {
        String a = osArch == null ? "" : osArch.strip().toLowerCase(Locale.ROOT);
        switch (a) {
            case "amd64":
            case "x86_64":
            case "x86-64":
            case "x64":
                return Optional.of(X86_64);
            case "aarch64":
            case "arm64":
                return Optional.of(AARCH64);
            default:
                return Optional.empty();
        }
    }
}
