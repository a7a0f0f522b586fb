package io.qvm.internal.probe;

import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.host.HostOs;

import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@link HostProbe} learned about this machine: OS, CPU architecture and the QEMU binaries
 * found, one per guest architecture.
 *
 * @param os      the host OS family
 * @param arch    the host CPU architecture as this JVM sees it ({@code os.arch})
 * @param qemus   installations by guest architecture (missing ones are absent)
 * @param rosetta this JVM is an x86_64 process under Rosetta 2 on an arm64 Mac ({@link Rosetta}):
 *                {@code arch} is then x86_64 although the hardware is aarch64
 */
public record HostInfo(HostOs os, Arch arch, Map<Arch, QemuInstallation> qemus, boolean rosetta) {
    public HostInfo {
        Objects.requireNonNull(os, "os");
        Objects.requireNonNull(arch, "arch");
        qemus = Map.copyOf(qemus);
    }

    /** A host whose JVM runs natively (not under Rosetta 2). */
    public HostInfo(HostOs os, Arch arch, Map<Arch, QemuInstallation> qemus) {
        this(os, arch, qemus, false);
    }

    /**
     * Refuses to pick an accelerator for a JVM under Rosetta 2 unless TCG was asked for by name
     * (see {@link Rosetta} for why this refuses rather than warns).
     *
     * @throws HostSetupException ({@link HostSetupException.Problem#HOST_SETUP_NEEDED}) naming
     *     Rosetta and the fix: an arm64 JDK
     */
    public void requireUntranslated(Accelerator preference) {
        Objects.requireNonNull(preference, "preference");
        if (rosetta && preference != Accelerator.TCG) {
            throw Rosetta.refusal(preference);
        }
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
