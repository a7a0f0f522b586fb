package io.qvm.internal.qemu;

import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import io.qvm.TransportPreference;
import java.util.Objects;

/**
 * Which kind of template this QEMU and accelerator can make, decided before any VM starts from
 * what the host probe already holds (the QEMU's {@link io.qvm.internal.host.QemuCapabilities},
 * cached with the binary's identity, its version and the accelerator): no process pays a failed
 * QEMU start and a template boot to find out that templates cannot work here.
 *
 * <ul>
 * <li>{@link Level#NONE}: WHPX (its vCPUs register a migration blocker — "non-migratable CPUID
 *     feature support, dirty memory tracking support, and XSAVE/XRSTOR support",
 *     {@code target/i386/whpx/whpx-all.c} — so no state can be saved; decided by the accelerator,
 *     read from QEMU's sources, untested on a real Windows host), a machine without a vmgenid
 *     device with an image whose init cannot reseed the CRNG from the host (clones would share
 *     randomness; adr/0012), or vsock (clones talk over virtio-serial). Every sandbox
 *     cold-boots.</li>
 * <li>{@link Level#FULL}: no {@code memory-backend-file} in this build (QEMU builds it on POSIX
 *     hosts only: Windows), or a QEMU older than {@link QemuCommand#READONLY_RAM_FILE} (a clone
 *     would open the shared RAM file read-write).</li>
 * <li>{@link Level#SHARED_RAM}: everything a shared-RAM template needs.</li>
 * </ul>
 *
 * @param level  the best template kind possible here
 * @param reason why not better (empty for {@link Level#SHARED_RAM})
 */
public record TemplateSupport(Level level, String reason) {

    /** The best template kind possible, best first. */
    public enum Level {
        /** RAM shared with the clones (milliseconds to a clone). */
        SHARED_RAM,
        /** The whole state in the migration stream (seconds to a clone). */
        FULL,
        /** No templates: a fresh cold-booted VM for each sandbox. */
        NONE
    }

    public TemplateSupport {
        Objects.requireNonNull(level, "level");
        Objects.requireNonNull(reason, "reason");
    }

    /** The verdict for sandboxes built from {@code in} (its role is ignored). */
    public static TemplateSupport of(QemuCommandInput in) {
        if (in.accelerator() == Accelerator.WHPX) {
            return new TemplateSupport(Level.NONE, "WHPX blocks migration for every vCPU (non-migratable CPUID "
                    + "features, dirty memory tracking, XSAVE/XRSTOR), so no VM state can be saved or restored");
        }
        if (in.config().transport() == TransportPreference.VSOCK) {
            return new TemplateSupport(Level.NONE, "vsock was requested, and clones talk over virtio-serial");
        }
        MachineProfile p;
        try {
            p = MachineProfile.select(in.hostOs(), in.hostArch(), in.guestArch(), in.accelerator(), in.qemuVersion(),
                    true, in.capabilities());
        } catch (HostSetupException e) {
            return new TemplateSupport(Level.NONE, e.getMessage());
        }
        java.util.Optional<String> unreseeded = QemuCommand.clonesUnreseeded(p, in);
        if (unreseeded.isPresent()) {
            return new TemplateSupport(Level.NONE, unreseeded.get());
        }
        if (!in.capabilities().hasObject(QemuCommand.MEMORY_BACKEND_FILE)) {
            return new TemplateSupport(Level.FULL, "this QEMU has no " + QemuCommand.MEMORY_BACKEND_FILE
                    + " (-object help does not list it; QEMU builds it on POSIX hosts only), so clones cannot share "
                    + "the template's RAM");
        }
        return QemuCommand.sharedRamClonesUnsupported(in.qemuVersion())
                .map(why -> new TemplateSupport(Level.FULL, why))
                .orElse(new TemplateSupport(Level.SHARED_RAM, ""));
    }
}
