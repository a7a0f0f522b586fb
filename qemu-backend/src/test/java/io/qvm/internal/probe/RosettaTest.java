package io.qvm.internal.probe;

import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * An x86_64 JDK on an Apple silicon Mac (Rosetta 2), reached through the {@code os.name} /
 * {@code os.arch} seam and a {@link CommandRunner} that replays what macOS prints. The QEMU
 * outputs are derived, not recorded on a Mac: Homebrew's arm64 {@code qemu-system-x86_64 -accel
 * help} lists only tcg (HVF runs same-architecture guests only).
 */
@Tag("unit")
class RosettaTest {

    private static final String HOMEBREW = "/opt/homebrew/bin";

    /** Replays macOS: sysctl by absolute path only, and Homebrew's arm64 QEMU 9.2. */
    private static final class MacRunner implements CommandRunner {
        final List<String> asked = new ArrayList<>();
        private final String procTranslated;

        MacRunner(String procTranslated) {
            this.procTranslated = procTranslated;
        }

        @Override
        public Result run(List<String> argv, java.time.Duration deadline) {
            String line = String.join(" ", argv);
            asked.add(line);
            if (argv.get(0).equals("sysctl")) {
                throw new UncheckedIOException(new java.io.IOException("Cannot run program \"sysctl\": error=2, "
                        + "No such file or directory (an IDE's PATH has no /usr/sbin)"));
            }
            if (line.equals("/usr/sbin/sysctl -n sysctl.proc_translated")) {
                return procTranslated == null ? new Result(1, "", "sysctl: unknown oid 'sysctl.proc_translated'\n", false)
                        : new Result(0, procTranslated + "\n", "", false);
            }
            if (line.equals("/usr/sbin/sysctl -n kern.hv_support")) {
                return new Result(0, "1\n", "", false);
            }
            if (argv.get(0).endsWith("qemu-system-x86_64") || argv.get(0).endsWith("qemu-system-aarch64")) {
                return qemu(argv).run(argv, deadline); // Homebrew's builds on Apple Silicon, as recorded/derived
            }
            throw new AssertionError("unexpected command: " + line);
        }

        @Override
        public Result run(List<String> argv, String stdin, java.time.Duration deadline) {
            asked.add(String.join(" ", argv));
            return qemu(argv).run(argv, stdin, deadline);
        }

        private static CommandRunner qemu(List<String> argv) {
            return QemuBuilds.replay(argv.get(0).endsWith("qemu-system-x86_64") ? "homebrew-macos-arm64-x86_64"
                    : "homebrew-macos-arm64-aarch64", new java.util.concurrent.atomic.AtomicInteger());
        }
    }

    private static HostProbe mac(String osArch, CommandRunner runner) {
        QemuLocator homebrew = new QemuLocator(HostOs.MACOS, Map.of("PATH", HOMEBREW + ":/usr/bin:/bin"),
                p -> p.getParent() != null && p.getParent().equals(Path.of(HOMEBREW)));
        return new HostProbe("Mac OS X", osArch, homebrew, runner);
    }

    @Test
    void anX86JdkOnAppleSiliconIsSeenAsRosettaBySysctlByAbsolutePath() {
        MacRunner runner = new MacRunner("1");
        HostInfo h = mac("x86_64", runner).probe();
        assertTrue(h.rosetta());
        assertEquals(Arch.X86_64, h.arch(), "os.arch is reported as it is; the flag says what it means");
        assertTrue(runner.asked.contains("/usr/sbin/sysctl -n sysctl.proc_translated"), runner.asked.toString());
        assertTrue(mac("amd64", new MacRunner("1")).probe().rosetta());
    }

    @Test
    void nativeJvmsAreNotRosetta() {
        assertFalse(mac("x86_64", new MacRunner("0")).probe().rosetta(), "native process on an Apple silicon Mac");
        assertFalse(mac("x86_64", new MacRunner(null)).probe().rosetta(), "an Intel Mac before macOS 11: no such oid");
        MacRunner arm = new MacRunner("1");
        assertFalse(mac("aarch64", arm).probe().rosetta(), "an arm64 JVM is never translated");
        assertTrue(arm.asked.stream().noneMatch(c -> c.contains("sysctl")), "not even asked: " + arm.asked);
        assertFalse(Rosetta.translated(HostOs.LINUX, "x86_64", (argv, d) -> {
            throw new AssertionError("no sysctl on Linux: " + argv);
        }));
        assertFalse(Rosetta.translated(HostOs.MACOS, "x86_64", (argv, d) -> {
            throw new UncheckedIOException(new java.io.IOException("no sysctl at all"));
        }), "sysctl not runnable: native (the HVF layer then says why)");
    }

    @Test
    void autoUnderRosettaIsRefusedWithTheArm64JdkFixBeforeAnyLayerRuns() {
        HostInfo h = mac("x86_64", new MacRunner("1")).probe();
        AcceleratorCheck never = (a, host, g) -> {
            throw new AssertionError("no layer may run under Rosetta: " + a);
        };
        for (Accelerator pref : new Accelerator[] {Accelerator.AUTO, Accelerator.HVF}) {
            HostSetupException e = assertThrows(HostSetupException.class,
                    () -> new AcceleratorSelector(never, never, never).select(pref, h));
            assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
            assertTrue(e.getMessage().contains("Rosetta 2"), e.getMessage());
            assertTrue(e.getMessage().contains("install an arm64 (aarch64) JDK"), e.getMessage());
            assertTrue(e.getMessage().contains("qemu-system-aarch64 and the aarch64 image with HVF"), e.getMessage());
            assertTrue(e.getMessage().contains("--accelerator tcg"), e.getMessage());
        }
    }

    @Test
    void explicitTcgUnderRosettaIsTheUsersChoice() {
        HostInfo h = mac("x86_64", new MacRunner("1")).probe();
        AcceleratorCheck pass = (a, host, g) -> LayerVerdict.pass(a, Layer.COMPILED_IN, "ok");
        AcceleratorChoice c = new AcceleratorSelector(pass, pass, pass).select(Accelerator.TCG, h);
        assertEquals(Accelerator.TCG, c.accelerator());
    }

    /** The old behaviour this replaces: with the real layers, AUTO fell back to TCG with an HVF fix text. */
    @Test
    void withoutTheFlagTheSameHostWouldSilentlyFallBackToTcg() {
        HostInfo probed = mac("x86_64", new MacRunner("1")).probe();
        HostInfo unflagged = new HostInfo(probed.os(), probed.arch(), probed.qemus());
        AcceleratorCheck pass = (a, host, g) -> LayerVerdict.pass(a, Layer.FUNCTIONAL, "ok");
        AcceleratorChoice c = new AcceleratorSelector(new CompiledInCheck(),
                new HostSupportCheck(Path.of("/nonexistent"), Path.of("/nonexistent"), new MacRunner("1")), pass)
                .select(Accelerator.AUTO, unflagged);
        assertEquals(Accelerator.TCG, c.accelerator());
        assertTrue(c.fellBack());
    }

    @Test
    void hvfHostSupportRunsSysctlByAbsolutePath() {
        HostInfo mac = new HostInfo(HostOs.MACOS, Arch.AARCH64, Map.of());
        LayerVerdict v = new HostSupportCheck(Path.of("/nonexistent"), Path.of("/nonexistent"), new MacRunner("0"))
                .check(Accelerator.HVF, mac, Arch.AARCH64);
        assertTrue(v.passed(), v.toString());
    }
}
