package io.qvm.image;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * A guest architecture, with the names each tool in the image build uses for it.
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
     * Parses qvm, Debian or JVM spellings ({@code x86_64}, {@code amd64}, {@code aarch64},
     * {@code arm64}).
     */
    public static Arch parse(String name) {
        String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        for (Arch a : values()) {
            if (a.id.equals(n) || a.debian.equals(n)) {
                return a;
            }
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
