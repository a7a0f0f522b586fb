package io.qvm.internal.host;

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
 * @param capabilities what it reports it can do ({@code QemuCapabilityProbe}): the command line
 *                    follows this, never the host OS or the version alone
 */
public record QemuInstallation(Arch guestArch, Path binary, QemuVersion version, QemuCapabilities capabilities) {
    public QemuInstallation {
        Objects.requireNonNull(guestArch, "guestArch");
        Objects.requireNonNull(binary, "binary");
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(capabilities, "capabilities");
    }

    /**
     * An installation of which only the accelerators are known (tests of the accelerator
     * choice): {@code QemuCommand} builds no argv for it.
     */
    public QemuInstallation(Arch guestArch, Path binary, QemuVersion version, Set<Accelerator> compiledIn) {
        this(guestArch, binary, version, QemuCapabilities.acceleratorsOnly(compiledIn));
    }

    /** Accelerators listed by {@code -accel help} (probe layer 1). */
    public Set<Accelerator> compiledIn() {
        return capabilities.accelerators();
    }
}
