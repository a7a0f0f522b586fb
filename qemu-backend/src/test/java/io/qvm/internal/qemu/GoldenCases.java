package io.qvm.internal.qemu;

import io.qvm.Accelerator;
import io.qvm.SandboxConfig;
import io.qvm.protocol.image.Arch;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.probe.QemuBuilds;
import io.qvm.internal.host.QemuCapabilities;
import io.qvm.internal.host.QemuVersion;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** The host/guest/accelerator pairs pinned by golden files, with fixed paths per OS. */
final class GoldenCases {

    private GoldenCases() {
    }

    static final SandboxConfig CONFIG = SandboxConfig.defaults();

    static QemuCommandInput.Builder unix(HostOs os, Arch host, Arch guest, Accelerator a, String version, String bin) {
        String run = os == HostOs.MACOS ? "/Users/qvm/Library/Caches/qvm/run/s1" : "/run/user/1000/qvm/s1";
        String img = os == HostOs.MACOS ? "/Users/qvm/qvm/out/image/" : "/srv/qvm/out/image/";
        return QemuCommandInput.builder().host(os, host).guestArch(guest).accelerator(a)
                .qemu(Path.of(bin), QemuVersion.of(version)).capabilities(capabilities(os, host, guest, version))
                .config(CONFIG)
                .image(Path.of(img + guest.qemuName() + "/vmlinuz"),
                        Path.of(img + guest.qemuName() + "/initramfs.cpio.lz4"))
                .qmpSocket(Path.of(run + "/qmp.sock")).consoleLog(Path.of(run + "/console.log")).eventsLog(Path.of(run + "/events.log"))
                .pidFile(Path.of(run + "/qemu.pid")).controlSocket(Path.of(run + "/control.sock"))
                .transport(new GuestTransport.Serial(Path.of(run + "/worker.sock")));
    }

    /**
     * The capabilities of the build a user of {@code os} most likely has for {@code version}: the
     * recorded Debian 12 (7.2) and bookworm-backports (10.0) builds, the derived Ubuntu 22.04 (6.2)
     * and 24.04 (8.2) builds, Homebrew's and the Windows installer's (derived).
     */
    static QemuCapabilities capabilities(HostOs os, Arch host, Arch guest, String version) {
        return QemuBuilds.capabilities(build(os, host, guest, version));
    }

    static String build(HostOs os, Arch host, Arch guest, String version) {
        String g = guest.qemuName();
        if (os == HostOs.WINDOWS) {
            return "windows-x86_64";
        }
        if (os == HostOs.MACOS) {
            String h = host == Arch.AARCH64 ? "arm64" : "x86_64";
            String b = "homebrew-macos-" + h + "-" + g;
            return version.startsWith("6.") && guest == Arch.AARCH64 ? b + "-qemu-6.2" : b;
        }
        if (version.startsWith("6.")) {
            return "ubuntu-22.04-" + g;
        }
        if (version.startsWith("8.")) {
            return "ubuntu-24.04-" + g;
        }
        return (version.startsWith("7.") ? "debian-12-" : "debian-12-backports-") + g;
    }

    static Map<String, QemuCommandInput> all() {
        Map<String, QemuCommandInput> m = new LinkedHashMap<>();
        m.put("linux-x86_64-kvm", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.KVM, "7.2.22",
                "/usr/bin/qemu-system-x86_64").build());
        m.put("linux-x86_64-tcg", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, "7.2.22",
                "/usr/bin/qemu-system-x86_64").build());
        m.put("linux-x86_64-tcg-qemu-6.2", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, "6.2.0",
                "/usr/bin/qemu-system-x86_64").build());
        m.put("linux-x86_64-kvm-vsock", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.KVM, "7.2.22",
                "/usr/bin/qemu-system-x86_64").transport(new GuestTransport.Vsock(42, 5000)).build());
        m.put("linux-aarch64-kvm", unix(HostOs.LINUX, Arch.AARCH64, Arch.AARCH64, Accelerator.KVM, "7.2.22",
                "/usr/bin/qemu-system-aarch64").build());
        m.put("linux-x86_64-host-aarch64-guest-tcg", unix(HostOs.LINUX, Arch.X86_64, Arch.AARCH64, Accelerator.TCG,
                "7.2.22", "/usr/bin/qemu-system-aarch64").build());
        m.put("macos-aarch64-hvf", unix(HostOs.MACOS, Arch.AARCH64, Arch.AARCH64, Accelerator.HVF, "9.2.0",
                "/opt/homebrew/bin/qemu-system-aarch64").build());
        m.put("macos-aarch64-host-x86_64-guest-tcg", unix(HostOs.MACOS, Arch.AARCH64, Arch.X86_64, Accelerator.TCG,
                "9.2.0", "/opt/homebrew/bin/qemu-system-x86_64").build());
        m.put("macos-x86_64-hvf", unix(HostOs.MACOS, Arch.X86_64, Arch.X86_64, Accelerator.HVF, "9.2.0",
                "/usr/local/bin/qemu-system-x86_64").build());
        String ram = "/home/qvm/.cache/qvm/templates/0123456789abcdef0123/ram";
        m.put("linux-x86_64-tcg-template", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, "7.2.22",
                "/usr/bin/qemu-system-x86_64").role(new VmRole.Template(java.util.Optional.of(Path.of(ram)))).build());
        // a clone maps the template's RAM read-only (readonly=on,rom=off): QEMU 8.2 at the least
        m.put("linux-x86_64-tcg-clone", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, "8.2.2",
                "/usr/bin/qemu-system-x86_64").role(new VmRole.Clone(java.util.Optional.of(Path.of(ram)))).build());
        m.put("linux-x86_64-tcg-clone-qemu-10.0", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG,
                "10.0.2", "/usr/bin/qemu-system-x86_64").role(new VmRole.Clone(java.util.Optional.of(Path.of(ram))))
                .build());
        m.put("linux-x86_64-kvm-clone", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.KVM, "8.2.2",
                "/usr/bin/qemu-system-x86_64").role(new VmRole.Clone(java.util.Optional.of(Path.of(ram)))).build());
        m.put("linux-x86_64-tcg-clone-full", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, "7.2.22",
                "/usr/bin/qemu-system-x86_64").role(new VmRole.Clone(java.util.Optional.empty())).build());
        // qvm as root: QEMU drops to the unprivileged user (-runas; -run-with user= from 9.1)
        m.put("linux-x86_64-tcg-root", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, "7.2.22",
                "/usr/bin/qemu-system-x86_64").runAs(java.util.Optional.of("qvm")).build());
        m.put("linux-x86_64-kvm-clone-root-qemu-10.0", unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.KVM,
                "10.0.2", "/usr/bin/qemu-system-x86_64").role(new VmRole.Clone(java.util.Optional.of(Path.of(ram))))
                .runAs(java.util.Optional.of("qvm")).build());
        String win = "C:\\Users\\qvm\\AppData\\Local\\qvm\\run\\s1\\";
        m.put("windows-x86_64-whpx", QemuCommandInput.builder().host(HostOs.WINDOWS, Arch.X86_64)
                .guestArch(Arch.X86_64).accelerator(Accelerator.WHPX)
                .qemu(Path.of("C:\\Program Files\\qemu\\qemu-system-x86_64.exe"), QemuVersion.of("9.2.0"))
                .capabilities(QemuBuilds.capabilities("windows-x86_64"))
                .config(CONFIG)
                .image(Path.of("C:\\qvm\\out\\image\\x86_64\\vmlinuz"),
                        Path.of("C:\\qvm\\out\\image\\x86_64\\initramfs.cpio.lz4"))
                .qmpSocket(Path.of(win + "qmp.sock")).consoleLog(Path.of(win + "console.log")).eventsLog(Path.of(win + "events.log"))
                .pidFile(Path.of(win + "qemu.pid")).controlSocket(Path.of(win + "control.sock"))
                .transport(new GuestTransport.Serial(Path.of(win + "worker.sock")))
                .build());
        return m;
    }
}
