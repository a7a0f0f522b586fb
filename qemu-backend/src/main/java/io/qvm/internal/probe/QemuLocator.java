package io.qvm.internal.probe;

import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.image.Arch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Finds {@code qemu-system-<arch>} for a guest architecture. Search order, first hit wins:
 * <ol>
 * <li>{@code $QVM_QEMU}: either a directory holding the binaries, or the full path of one
 *     {@code qemu-system-<arch>[.exe]} — then its directory is searched for the other
 *     architectures;</li>
 * <li>every directory on {@code PATH};</li>
 * <li>the usual install locations: macOS Homebrew {@code /opt/homebrew/bin} (Apple silicon) and
 *     {@code /usr/local/bin} (Intel), MacPorts {@code /opt/local/bin}; Windows
 *     {@code C:\Program Files\qemu} (the installer from qemu.weilnetz.de); Linux
 *     {@code /usr/bin}, {@code /usr/local/bin}.</li>
 * </ol>
 * A pure function of its inputs (environment, OS and an "is executable" test) so it is tested
 * without touching the host.
 */
public final class QemuLocator {

    private final HostOs os;
    private final Map<String, String> env;
    private final Predicate<Path> isExecutable;

    /**
     * @param os           decides the binary suffix ({@code .exe}), PATH separator and install dirs
     * @param env          the environment ({@code QVM_QEMU}, {@code PATH}, {@code ProgramFiles})
     * @param isExecutable the test for a candidate, normally {@code Files::isExecutable}
     */
    public QemuLocator(HostOs os, Map<String, String> env, Predicate<Path> isExecutable) {
        this.os = os;
        this.env = Map.copyOf(env);
        this.isExecutable = isExecutable;
    }

    /** A locator for this process's environment. */
    public static QemuLocator system(HostOs os) {
        return new QemuLocator(os, QvmEnvironment.system().variables(), p -> Files.isRegularFile(p) && Files.isExecutable(p));
    }

    /** The binary's file name, e.g. {@code qemu-system-aarch64} or {@code qemu-system-x86_64.exe}. */
    public String binaryName(Arch guest) {
        return "qemu-system-" + guest.qemuName() + (os == HostOs.WINDOWS ? ".exe" : "");
    }

    /** Every place looked at, in order (for error messages and tests). */
    public List<Path> candidates(Arch guest) {
        String name = binaryName(guest);
        Set<Path> out = new LinkedHashSet<>();
        Optional<String> override = QvmEnvironment.of(env, "", "").qemuOverride();
        if (override.isPresent()) {
            Path o = Path.of(override.get().strip());
            String file = o.getFileName() == null ? "" : o.getFileName().toString();
            if (file.startsWith("qemu-system-")) {
                out.add(file.equals(name) ? o : (o.getParent() == null ? Path.of(name) : o.getParent().resolve(name)));
            } else {
                out.add(o.resolve(name));
            }
        }
        String path = env.getOrDefault("PATH", env.getOrDefault("Path", ""));
        String sep = os == HostOs.WINDOWS ? ";" : ":";
        for (String dir : path.split(sep)) {
            if (!dir.isBlank()) {
                out.add(Path.of(dir.strip()).resolve(name));
            }
        }
        for (String dir : installDirs()) {
            out.add(Path.of(dir).resolve(name));
        }
        return new ArrayList<>(out);
    }

    /** The first executable candidate. */
    public Optional<Path> locate(Arch guest) {
        return candidates(guest).stream().filter(isExecutable).findFirst();
    }

    private List<String> installDirs() {
        switch (os) {
            case MACOS:
                return List.of("/opt/homebrew/bin", "/usr/local/bin", "/opt/local/bin");
            case WINDOWS:
                String pf = env.getOrDefault("ProgramFiles", "C:\\Program Files");
                return List.of(pf + "\\qemu");
            default:
                return List.of("/usr/bin", "/usr/local/bin");
        }
    }

    /** How to install the missing QEMU on this OS. */
    public static String installHint(HostOs os, Arch guest) {
        return os.qemuInstallHint(guest);
    }
}
