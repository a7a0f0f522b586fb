package io.qvm.internal.probe;

import io.qvm.internal.host.MacOsTools;
import io.qvm.internal.host.CommandRunner;

import io.qvm.internal.host.HostOs;
import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import java.util.Locale;

/**
 * Rosetta 2: an x86_64 JDK on an Apple silicon Mac. Java then reports {@code os.arch} x86_64, so
 * without this check qvm would pick the x86_64 guest image and {@code qemu-system-x86_64} — which
 * HVF cannot run on an arm64 Mac (HVF runs guests of the Mac's own architecture only) — and every
 * sandbox would silently run under TCG, roughly ten times slower, with a fix text about HVF that
 * is wrong. The kernel says whether a process is translated: {@code sysctl.proc_translated} is 1
 * under Rosetta, 0 for a native process, and absent on Intel Macs before macOS 11.
 *
 * <p>Policy (see {@link HostInfo#requireUntranslated}): refuse, naming Rosetta and the fix (an
 * arm64 JDK), unless TCG was asked for explicitly. Refusing is chosen over a warning because the
 * silent tenfold slowdown is the bug: a warning in a server log is read after the capacity
 * planning went wrong. A user who wants the x86_64 guest anyway says so with accelerator TCG.
 * Untested on a real Mac: proven here through the {@code os.name}/{@code os.arch} seam and a
 * {@link CommandRunner} replaying {@code sysctl}'s output.
 */
public final class Rosetta {

    /** The fix, in one place for the error, the probe and {@code qvm doctor}. */
    public static final String FIX = "install an arm64 (aarch64) JDK 17 or newer — e.g. `brew install openjdk@17` "
            + "from an arm64 Homebrew in /opt/homebrew, or an aarch64 .pkg from adoptium.net — and run qvm with it "
            + "(`/usr/libexec/java_home -a arm64 -v 17+` prints its home): qvm then uses qemu-system-aarch64 and the "
            + "aarch64 image with HVF. To run the x86_64 guest under TCG emulation anyway, ask for it: "
            + "accelerator TCG (qvm --accelerator tcg)";

    private Rosetta() {
    }

    /**
     * Whether this JVM is an x86_64 process translated by Rosetta 2: on macOS only, for an
     * x86_64 {@code os.arch} only, and only when {@code /usr/sbin/sysctl -n sysctl.proc_translated}
     * prints 1. Any other answer (0, absent, sysctl not runnable) is "native".
     */
    public static boolean translated(HostOs os, String osArch, CommandRunner runner) {
        if (os != HostOs.MACOS) {
            return false;
        }
        String a = osArch == null ? "" : osArch.toLowerCase(Locale.ROOT);
        if (!a.equals("x86_64") && !a.equals("amd64")) {
            return false;
        }
        return MacOsTools.sysctl(runner, "sysctl.proc_translated").map("1"::equals).orElse(false);
    }

    /** One line for the probe and {@code qvm doctor}. */
    public static String describe() {
        return "this JVM is an x86_64 process running under Rosetta 2 on an Apple silicon (arm64) Mac "
                + "(sysctl.proc_translated = 1)";
    }

    /** The typed refusal for {@code preference} (anything but TCG). */
    static HostSetupException refusal(Accelerator preference) {
        return new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED, describe() + ": with accelerator "
                + preference.name().toLowerCase(java.util.Locale.ROOT) + " qvm would run the x86_64 guest image on qemu-system-x86_64, which HVF cannot "
                + "accelerate on an arm64 Mac, so every sandbox would be emulated by TCG, roughly 10x slower. Fix: "
                + FIX);
    }
}
