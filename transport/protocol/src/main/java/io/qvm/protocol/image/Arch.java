package io.qvm.protocol.image;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * A CPU architecture qvm runs on (host) or boots (guest), with the names each tool uses for it:
 * the image build, QEMU and the guest kernel.
 *
 * <p>{@link #id()} is the qvm name (also the image directory name, {@code out/image/<id>}),
 * {@link #debian()} the Debian architecture, {@link #multiarch()} the Debian multiarch triplet
 * under which the libraries live, and {@link #elfMachine()} the ELF {@code e_machine} every
 * binary in the image must carry.
 */
public enum Arch {
    X86_64("x86_64", "amd64", "x86_64-linux-gnu", 62, "ttyS0"),
    AARCH64("aarch64", "arm64", "aarch64-linux-gnu", 183, "ttyAMA0");

    private final String id;
    private final String debian;
    private final String multiarch;
    private final int elfMachine;
    private final String console;

    Arch(String id, String debian, String multiarch, int elfMachine, String console) {
        this.id = id;
        this.debian = debian;
        this.multiarch = multiarch;
        this.elfMachine = elfMachine;
        this.console = console;
    }

    /** qvm's name: {@code x86_64} or {@code aarch64}. */
    public String id() {
        return id;
    }

    /** The name in {@code qemu-system-NAME}; the same as {@link #id()}. */
    public String qemuName() {
        return id;
    }

    /** Debian's name: {@code amd64} or {@code arm64}. */
    public String debian() {
        return debian;
    }

    /** Debian multiarch triplet, e.g. {@code x86_64-linux-gnu}. */
    public String multiarch() {
        return multiarch;
    }

    /** ELF e_machine: 62 (EM_X86_64) or 183 (EM_AARCH64). */
    public int elfMachine() {
        return elfMachine;
    }

    /** The serial console device the kernel command line names. */
    public String console() {
        return console;
    }

    /** The architecture of the JVM running this code, if it is one qvm builds for. */
    public static Arch host() {
        return parse(System.getProperty("os.arch"));
    }

    /**
     * Normalises Java's {@code os.arch}: {@code amd64}, {@code x86_64}, {@code x86-64},
     * {@code x64} → X86_64; {@code aarch64}, {@code arm64} → AARCH64; anything else → empty.
     */
    public static Optional<Arch> fromOsArch(String osArch) {
        String a = osArch == null ? "" : osArch.strip().toLowerCase(Locale.ROOT);
        switch (a) {
            case "x86-64":
            case "x64":
                return Optional.of(X86_64);
            default:
                for (Arch v : values()) {
                    if (v.id.equals(a) || v.debian.equals(a)) {
                        return Optional.of(v);
                    }
                }
                return Optional.empty();
        }
    }

    /**
     * Parses qvm, Debian or JVM spellings ({@code x86_64}, {@code amd64}, {@code aarch64},
     * {@code arm64}).
     */
    public static Arch parse(String name) {
        Optional<Arch> a = fromOsArch(name);
        if (a.isPresent()) {
            return a.get();
        }
        throw new IllegalArgumentException("unknown architecture '" + name + "': expected one of "
                + Arrays.stream(values()).map(Arch::id).collect(Collectors.joining(", "))
                + " (Debian names amd64/arm64 are accepted too)");
    }

    @Override
    public String toString() {
        return id;
    }
}
