package io.qvm.backend.probe;

import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link HostProbe} learned about this machine: OS, CPU architecture and the QEMU binaries
 * found, one per guest architecture.
 *
 * @param os    the host OS family
 * @param arch  the host CPU architecture
 * @param qemus installations by guest architecture (missing ones are absent)
 */
public record HostInfo(HostOs os, Arch arch, Map<Arch, QemuInstallation> qemus) {
    public HostInfo {
        Objects.requireNonNull(os, "os");
        Objects.requireNonNull(arch, "arch");
        qemus = Map.copyOf(qemus);
    }

    /** The QEMU that emulates {@code guest}, if one was found. */
    public Optional<QemuInstallation> qemu(Arch guest) {
        return Optional.ofNullable(qemus.get(guest));
    }

    /**
     * The QEMU that emulates {@code guest}.
     *
     * @throws HostSetupException naming the package to install
     */
    public QemuInstallation requireQemu(Arch guest) {
        return qemu(guest).orElseThrow(() -> new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, 
                "no qemu-system-" + guest.qemuName() + " found (searched $QVM_QEMU, PATH and the usual install "
                        + "directories): " + QemuLocator.installHint(os, guest)));
    }
}
