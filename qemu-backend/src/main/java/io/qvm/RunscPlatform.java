package io.qvm;

import java.util.Locale;

/**
 * The gVisor platform runsc uses inside the guest ({@code runsc --platform=NAME}), passed to the
 * guest init as {@code qvm.platform=NAME} on the kernel command line.
 *
 * <p>{@link #SYSTRAP} is faster (FINDINGS: a jlinked {@code java Hello} in runsc under TCG took
 * ~4.5–4.9 s with systrap against ~6.6 s with ptrace) but needs runsc 2023 or newer;
 * {@link #PTRACE} works with every runsc release.
 */
public enum RunscPlatform {
    /** {@code --platform=systrap} (runsc ≥ mid-2023). */
    SYSTRAP,
    /** {@code --platform=ptrace}. */
    PTRACE;

    /** The value on the kernel command line and runsc's flag: {@code systrap} or {@code ptrace}. */
    public String kernelValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses {@code systrap|ptrace} (any case).
     *
     * @throws InvalidConfigException naming the allowed values
     */
    public static RunscPlatform parse(String text) {
        if (text != null) {
            for (RunscPlatform p : values()) {
                if (p.name().equalsIgnoreCase(text.strip())) {
                    return p;
                }
            }
        }
        throw new InvalidConfigException("runscPlatform", text, "one of systrap, ptrace");
    }
}
