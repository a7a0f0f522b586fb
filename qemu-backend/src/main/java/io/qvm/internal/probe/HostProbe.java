package io.qvm.internal.probe;

import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.host.QemuCapabilities;

import io.qvm.internal.host.QemuVersion;
import io.qvm.internal.host.CommandRunner;

import io.qvm.internal.host.HostOs;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Finds out what this host is and which QEMU it has: OS family, CPU architecture (normalised from
 * {@code os.arch}), and for each guest architecture the {@code qemu-system-<arch>} binary
 * ({@link QemuLocator}), its version ({@code --version} → {@link QemuVersion}) and what it
 * supports ({@link QemuCapabilities}: the accelerators compiled in, machines, objects, devices,
 * options), asked once per binary and cached with its identity.
 *
 * <pre>{@code
 * HostInfo host = HostProbe.system().probe();
 * AcceleratorChoice choice = AcceleratorSelector.builder().kernel(vmlinuz).build()
 *         .select(config.accelerator(), host);
 * }</pre>
 *
 * On macOS with an x86_64 JVM it also asks whether that JVM runs under Rosetta 2 ({@link Rosetta}).
 *
 * Takes one {@code --version} run per binary once its capabilities are cached (the first time,
 * about eight short runs, under a second). Whether an accelerator actually works is not
 * decided here but by {@link AcceleratorSelector}.
 */
public final class HostProbe {

    private static final Duration COMMAND_DEADLINE = Duration.ofSeconds(10);

    private final String osName;
    private final String osArch;
    private final QemuLocator locator;
    private final CommandRunner runner;
    private final QemuCapabilityProbe capabilities;

    /**
     * @param osName  Java's {@code os.name}
     * @param osArch  Java's {@code os.arch}
     * @param locator where to look for QEMU
     * @param runner  runs {@code --version}, {@code -accel help} and, on macOS, {@code /usr/sbin/sysctl}
     */
    public HostProbe(String osName, String osArch, QemuLocator locator, CommandRunner runner) {
        this(osName, osArch, locator, runner, null);
    }

    /**
     * @param cache where each QEMU binary's capabilities are kept across processes (null: in this
     *              JVM only)
     */
    public HostProbe(String osName, String osArch, QemuLocator locator, CommandRunner runner, ProbeCache cache) {
        this.osName = osName;
        this.osArch = osArch;
        this.locator = locator;
        this.runner = runner;
        this.capabilities = new QemuCapabilityProbe(runner, cache);
    }

    /** The probe for this JVM's host and environment. */
    public static HostProbe system() {
        String osName = System.getProperty("os.name", "");
        return new HostProbe(osName, System.getProperty("os.arch", ""), QemuLocator.system(HostOs.fromOsName(osName)),
                CommandRunner.system(), ProbeCache.defaultLocation(System.getenv()));
    }

    /**
     * Probes the host.
     *
     * @throws HostSetupException when the CPU architecture is neither x86_64 nor aarch64
     * @throws HostSetupException    when a found QEMU binary does not run or print a version
     */
    public HostInfo probe() {
        HostOs os = HostOs.fromOsName(osName);
        Arch arch = Arch.fromOsArch(osArch).orElseThrow(() -> new HostSetupException(HostSetupException.Problem.HOST_UNSUPPORTED, 
                "unsupported host CPU architecture '" + osArch + "': qvm runs on x86_64 and aarch64 hosts"));
        Map<Arch, QemuInstallation> found = new EnumMap<>(Arch.class);
        for (Arch guest : Arch.values()) {
            locator.locate(guest).ifPresent(bin -> found.put(guest, inspect(guest, bin)));
        }
        return new HostInfo(os, arch, found, Rosetta.translated(os, osArch, runner));
    }

    /**
     * Runs {@code --version} on one binary, and asks it what it supports unless a binary of the
     * same identity was asked before ({@link QemuCapabilityProbe}).
     */
    QemuInstallation inspect(Arch guest, Path binary) {
        CommandRunner.Result version = runChecked(List.of(binary.toString(), "--version"), binary);
        QemuVersion v;
        try {
            v = QemuVersion.parse(version.stdout());
        } catch (IllegalArgumentException e) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, binary + " --version printed no QEMU version (exit "
                    + version.exitCode() + "): " + e.getMessage());
        }
        QemuCapabilities c = capabilities.capabilities(QemuCapabilityProbe.Identity.of(binary, version.stdout()), guest);
        return new QemuInstallation(guest, binary, v, c);
    }

    private CommandRunner.Result runChecked(List<String> argv, Path binary) {
        try {
            CommandRunner.Result r = runner.run(argv, COMMAND_DEADLINE);
            if (!r.ok()) {
                throw new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, String.join(" ", argv) + " failed (exit " + r.exitCode()
                        + (r.timedOut() ? ", killed after " + COMMAND_DEADLINE.toSeconds() + " s" : "") + "): "
                        + r.stderr().strip());
            }
            return r;
        } catch (UncheckedIOException e) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, "cannot run " + binary + ": " + e.getMessage(), e);
        }
    }

    /** This host's OS as {@link HostProbe} sees it (no QEMU needed). */
    public HostOs os() {
        return HostOs.fromOsName(osName);
    }

    /** This host's arch, if supported. */
    public Optional<Arch> arch() {
        return Arch.fromOsArch(osArch);
    }
}
