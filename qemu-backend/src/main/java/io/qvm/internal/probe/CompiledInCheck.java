package io.qvm.internal.probe;

import io.qvm.internal.host.QemuCapabilities;
import io.qvm.protocol.image.Arch;
import io.qvm.Accelerator;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * Layer 1: is the accelerator compiled into the QEMU for this guest? Reads the set parsed from
 * {@code qemu-system-<arch> -accel help} by {@link HostProbe}, which prints e.g.
 * <pre>
 * Accelerators supported in QEMU binary:
 * tcg
 * kvm
 * </pre>
 * (Debian 12's {@code qemu-system-aarch64} on x86_64 lists only {@code tcg}.)
 */
public final class CompiledInCheck implements AcceleratorCheck {

    @Override
    public LayerVerdict check(Accelerator a, HostInfo host, Arch guest) {
        var qemu = host.qemu(guest);
        if (qemu.isEmpty()) {
            return LayerVerdict.fail(a, Layer.COMPILED_IN, "no qemu-system-" + guest.qemuName() + " found",
                    QemuLocator.installHint(host.os(), guest));
        }
        if (qemu.get().compiledIn().contains(a)) {
            return LayerVerdict.pass(a, Layer.COMPILED_IN, qemu.get().binary() + " " + qemu.get().version()
                    + " lists " + a.qemuName() + " in -accel help");
        }
        return LayerVerdict.fail(a, Layer.COMPILED_IN, qemu.get().binary() + " " + qemu.get().version()
                + " does not list " + a.qemuName() + " in -accel help (it lists " + names(qemu.get().compiledIn()) + ")",
                "use a QEMU build with " + a.qemuName() + " support; " + QemuLocator.installHint(host.os(), guest));
    }

    /** {@link QemuCapabilities#parseAccelHelp}. */
    public static Set<Accelerator> parseAccelHelp(String output) {
        return QemuCapabilities.parseAccelHelp(output);
    }

    private static String names(Set<Accelerator> set) {
        if (set.isEmpty()) {
            return "nothing";
        }
        StringBuilder sb = new StringBuilder();
        for (Accelerator a : set) {
            sb.append(sb.length() == 0 ? "" : ", ").append(a.qemuName());
        }
        return sb.toString();
    }
}
