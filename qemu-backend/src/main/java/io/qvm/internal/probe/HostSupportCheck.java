package io.qvm.internal.probe;

import io.qvm.internal.host.MacOsTools;
import io.qvm.internal.host.CommandRunner;

import io.qvm.internal.host.HostOs;
import io.qvm.protocol.image.Arch;
import io.qvm.Accelerator;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Layer 2: does this host offer the accelerator to this user? Cheap checks, no guest:
 * <ul>
 * <li><b>KVM</b> (Linux): {@code /dev/kvm} exists and is readable and writable by this process
 *     (access(2) semantics, so group membership counts). On this project's build machines it
 *     is — and still hangs guests, which is why layer 3 exists.</li>
 * <li><b>HVF</b> (macOS): {@code /usr/sbin/sysctl -n kern.hv_support} prints {@code 1} (by absolute
 *     path: an IDE's or launchd's JVM has no {@code /usr/sbin} on PATH).</li>
 * <li><b>WHPX</b> (Windows): {@code %SystemRoot%\System32\WinHvPlatform.dll} exists. The DLL
 *     ships with the optional feature "Windows Hypervisor Platform"
 *     ({@code HypervisorPlatform}); its presence says the feature is installed, not that the
 *     hypervisor is running (that needs a reboot and firmware virtualization) — layer 3 decides
 *     that. A file test was chosen over {@code powershell Get-WindowsOptionalFeature}, which
 *     needs an elevated shell and takes seconds.</li>
 * <li><b>TCG</b>: always.</li>
 * </ul>
 * Hardware accelerators run only guests of the host's own architecture.
 */
public final class HostSupportCheck implements AcceleratorCheck {

    /** Fix text for a {@code /dev/kvm} that exists but is not read-write. */
    public static final String FIX_KVM_GROUP = "add your user to the kvm group (sudo usermod -aG kvm $USER, then log in again)";

    private final Path devKvm;
    private final Path windowsSystem32;
    private final CommandRunner runner;

    /**
     * @param devKvm          normally {@code /dev/kvm}
     * @param windowsSystem32 normally {@code %SystemRoot%\System32}
     * @param runner          runs {@code sysctl} on macOS
     */
    public HostSupportCheck(Path devKvm, Path windowsSystem32, CommandRunner runner) {
        this.devKvm = devKvm;
        this.windowsSystem32 = windowsSystem32;
        this.runner = runner;
    }

    /** The checks for this machine. */
    public static HostSupportCheck system(Map<String, String> env) {
        String root = env.getOrDefault("SystemRoot", env.getOrDefault("SYSTEMROOT", "C:\\Windows"));
        return new HostSupportCheck(Path.of("/dev/kvm"), Path.of(root, "System32"), CommandRunner.system());
    }

    @Override
    public LayerVerdict check(Accelerator a, HostInfo host, Arch guest) {
        if (a == Accelerator.TCG) {
            return LayerVerdict.pass(a, Layer.HOST_SUPPORT, "TCG needs nothing from the host");
        }
        if (guest != host.arch()) {
            return LayerVerdict.fail(a, Layer.HOST_SUPPORT, a.qemuName() + " runs only " + host.arch().qemuName()
                    + " guests on this " + host.arch().qemuName() + " host, not " + guest.qemuName(),
                    "use accelerator TCG (or AUTO) for a " + guest.qemuName() + " guest");
        }
        switch (a) {
            case KVM:
                return kvm(host);
            case HVF:
                return hvf(host);
            case WHPX:
                return whpx(host);
            default:
                throw new IllegalArgumentException("not a concrete accelerator: " + a);
        }
    }

    private LayerVerdict kvm(HostInfo host) {
        Accelerator a = Accelerator.KVM;
        if (host.os() != HostOs.LINUX) {
            return LayerVerdict.fail(a, Layer.HOST_SUPPORT, "KVM exists only on Linux, this host is " + host.os(),
                    "use " + nativeName(host.os()) + " or TCG");
        }
        if (!Files.exists(devKvm)) {
            return LayerVerdict.fail(a, Layer.HOST_SUPPORT, devKvm + " does not exist",
                    "enable virtualization (VT-x/AMD-V) in the firmware and load the module (modprobe kvm_intel or "
                            + "kvm_amd); inside a VM, enable nested virtualization");
        }
        if (!Files.isReadable(devKvm) || !Files.isWritable(devKvm)) {
            return LayerVerdict.fail(a, Layer.HOST_SUPPORT, devKvm + " exists but is not readable and writable by "
                    + "this user (" + System.getProperty("user.name") + ")", FIX_KVM_GROUP);
        }
        return LayerVerdict.pass(a, Layer.HOST_SUPPORT, devKvm + " is readable and writable");
    }

    private LayerVerdict hvf(HostInfo host) {
        Accelerator a = Accelerator.HVF;
        if (host.os() != HostOs.MACOS) {
            return LayerVerdict.fail(a, Layer.HOST_SUPPORT, "HVF exists only on macOS, this host is " + host.os(),
                    "use " + nativeName(host.os()) + " or TCG");
        }
        CommandRunner.Result r;
        try {
            r = runner.run(List.of(MacOsTools.SYSCTL, "-n", "kern.hv_support"), Duration.ofSeconds(5));
        } catch (UncheckedIOException e) {
            return LayerVerdict.fail(a, Layer.HOST_SUPPORT, "cannot run " + MacOsTools.SYSCTL + ": " + e.getMessage(),
                    "HVF is checked with macOS's own " + MacOsTools.SYSCTL + "; run qvm on macOS 11 or newer");
        }
        if (r.ok() && r.stdout().strip().equals("1")) {
            return LayerVerdict.pass(a, Layer.HOST_SUPPORT, "sysctl kern.hv_support = 1");
        }
        return LayerVerdict.fail(a, Layer.HOST_SUPPORT, "sysctl kern.hv_support = '" + r.stdout().strip()
                + "' (exit " + r.exitCode() + ")", "HVF needs a Mac with hardware virtualization (Apple silicon, or an "
                + "Intel Mac with VT-x); inside a VM, enable nested virtualization");
    }

    private LayerVerdict whpx(HostInfo host) {
        Accelerator a = Accelerator.WHPX;
        if (host.os() != HostOs.WINDOWS) {
            return LayerVerdict.fail(a, Layer.HOST_SUPPORT, "WHPX exists only on Windows, this host is " + host.os(),
                    "use " + nativeName(host.os()) + " or TCG");
        }
        Path dll = windowsSystem32.resolve("WinHvPlatform.dll");
        if (Files.exists(dll)) {
            return LayerVerdict.pass(a, Layer.HOST_SUPPORT, dll + " exists (Windows Hypervisor Platform installed)");
        }
        return LayerVerdict.fail(a, Layer.HOST_SUPPORT, dll + " does not exist",
                "enable Windows Hypervisor Platform (as administrator: Enable-WindowsOptionalFeature -Online "
                        + "-FeatureName HypervisorPlatform), then reboot");
    }

    private static String nativeName(HostOs os) {
        switch (os) {
            case LINUX:
                return "KVM";
            case MACOS:
                return "HVF";
            case WINDOWS:
                return "WHPX";
            default:
                return "TCG";
        }
    }
}
