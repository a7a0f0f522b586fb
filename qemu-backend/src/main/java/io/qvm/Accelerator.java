package io.qvm;

import java.util.Locale;

/**
 * Which QEMU accelerator runs the guest's CPUs.
 *
 * <p>{@link #AUTO} lets the backend choose: the host's native hypervisor (KVM on Linux, HVF on
 * macOS, WHPX on Windows) when all three probe layers pass for it — compiled into this QEMU,
 * usable on this host, and a short functional boot works — otherwise {@link #TCG}, with a
 * warning that says why. An explicit choice that is not usable is an error, never a silent
 * fallback.
 */
public enum Accelerator {
    /** Choose the fastest accelerator that passes every probe layer; fall back to TCG loudly. */
    AUTO,
    /** Linux KVM ({@code /dev/kvm}). */
    KVM,
    /** macOS Hypervisor.framework. */
    HVF,
    /** Windows Hypervisor Platform. */
    WHPX,
    /** QEMU's portable binary translator: always available, roughly ten times slower. */
    TCG;

    /**
     * The name QEMU uses for this accelerator in {@code -accel NAME} and in {@code -accel help}.
     *
     * @throws IllegalStateException for {@link #AUTO}, which is not a QEMU accelerator
     */
    public String qemuName() {
        if (this == AUTO) {
            throw new IllegalStateException("AUTO is a preference, not a QEMU accelerator: resolve it first");
        }
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses {@code auto|kvm|hvf|whpx|tcg} (any case).
     *
     * @throws InvalidConfigException naming the allowed values
     */
    public static Accelerator parse(String text) {
        if (text != null) {
            for (Accelerator a : values()) {
                if (a.name().equalsIgnoreCase(text.strip())) {
                    return a;
                }
            }
        }
        throw new InvalidConfigException("accelerator", text, "one of auto, kvm, hvf, whpx, tcg");
    }
}
