package io.qvm.backend.probe;

import io.qvm.protocol.image.Arch;
import io.qvm.Accelerator;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Set;

/**
 * One {@code qemu-system-<arch>} binary found on this host.
 *
 * @param guestArch   the architecture it emulates
 * @param binary      absolute path of the executable
 * @param version     from {@code --version}
 * @param compiledIn  accelerators listed by {@code -accel help} (probe layer 1)
 */
public record QemuInstallation(Arch guestArch, Path binary, QemuVersion version, Set<Accelerator> compiledIn) {
    public QemuInstallation {
        Objects.requireNonNull(guestArch, "guestArch");
        Objects.requireNonNull(binary, "binary");
        Objects.requireNonNull(version, "version");
        compiledIn = Set.copyOf(compiledIn);
    }
}
