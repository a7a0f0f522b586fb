package io.qvm.internal.qemu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import io.qvm.SandboxConfig;
import io.qvm.TransportPreference;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.probe.QemuBuilds;
import io.qvm.internal.host.QemuCapabilities;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The argv {@link QemuCommand} builds for each QEMU build users install ({@link QemuBuilds}: the
 * recorded Debian ones and the derived Homebrew, Windows, Fedora and Ubuntu ones), on the host
 * that build runs on with its best accelerator; the errors for what a build cannot do; and the
 * template verdict ({@link TemplateSupport}) known before any VM starts.
 */
@Tag("unit")
class QemuCommandBuildsTest {

    private static final Path RAM = Path.of("/home/qvm/.cache/qvm/templates/0123456789abcdef0123/ram");

    /** A sandbox input on the build's own host. */
    static QemuCommandInput.Builder on(String build, HostOs os, Arch host, Accelerator a) {
        return GoldenCases.unix(os, host, QemuBuilds.guest(build), a, QemuBuilds.version(build).toString(),
                QemuBuilds.binary(build).toString()).capabilities(QemuBuilds.capabilities(build));
    }

    @ParameterizedTest(name = "{0} {3}")
    @CsvSource({
        // build,                               host OS, host arch, accelerator, -sandbox, root: drop option,
        //                                      template verdict (this image: its init reseeds), with an older image
        "debian-12-x86_64,                      LINUX,   X86_64,  KVM,  true,  -runas,    FULL,       FULL",
        "debian-12-aarch64,                     LINUX,   X86_64,  TCG,  true,  -runas,    FULL,       NONE",
        "debian-12-backports-x86_64,            LINUX,   X86_64,  KVM,  true,  -run-with, SHARED_RAM, SHARED_RAM",
        "debian-12-backports-aarch64,           LINUX,   X86_64,  TCG,  true,  -run-with, SHARED_RAM, NONE",
        "fedora-42-x86_64,                      LINUX,   X86_64,  KVM,  true,  -run-with, SHARED_RAM, SHARED_RAM",
        "ubuntu-22.04-x86_64,                   LINUX,   X86_64,  KVM,  true,  -runas,    FULL,       FULL",
        "ubuntu-24.04-x86_64,                   LINUX,   X86_64,  KVM,  true,  -runas,    SHARED_RAM, SHARED_RAM",
        "homebrew-macos-arm64-aarch64,          MACOS,   AARCH64, HVF,  false, -run-with, SHARED_RAM, NONE",
        "homebrew-macos-arm64-aarch64-qemu-6.2, MACOS,   AARCH64, HVF,  false, -runas,    FULL,       NONE",
        "homebrew-macos-arm64-x86_64,           MACOS,   AARCH64, TCG,  false, -run-with, SHARED_RAM, SHARED_RAM",
        "homebrew-macos-x86_64-x86_64,          MACOS,   X86_64,  HVF,  false, -run-with, SHARED_RAM, SHARED_RAM",
        "windows-x86_64,                        WINDOWS, X86_64,  WHPX, false, ,          NONE,       NONE",
    })
    void theArgvFollowsWhatTheBuildReports(String build, HostOs os, Arch host, Accelerator a, boolean seccomp,
            String drop, TemplateSupport.Level verdict, TemplateSupport.Level olderImage) {
        QemuCapabilities caps = QemuBuilds.capabilities(build);
        List<String> argv = QemuCommand.build(on(build, os, host, a).build());
        assertEquals(seccomp, argv.contains("-sandbox"), build + ": " + argv);
        assertTrue(argv.contains("-action"), build);
        String machine = argv.get(argv.indexOf("-M") + 1);
        if (QemuBuilds.guest(build) == Arch.X86_64) {
            assertEquals(caps.machineHas("q35", "i8042") && machine.startsWith("q35"), machine.contains("i8042=off"),
                    build + ": " + machine);
            assertEquals(a == Accelerator.KVM, machine.startsWith("microvm"), build + ": " + machine);
        }
        assertEquals(build.endsWith("-qemu-6.2"), machine.contains("highmem=off"), build + ": " + machine);
        if (drop == null) {
            HostSetupException e = assertThrows(HostSetupException.class,
                    () -> QemuCommand.build(on(build, os, host, a).runAs(Optional.of("qvm")).build()));
            assertTrue(e.getMessage().contains("cannot drop"), e.getMessage());
        } else {
            List<String> root = QemuCommand.build(on(build, os, host, a).runAs(Optional.of("qvm")).build());
            assertTrue(root.contains(drop), build + ": " + root);
        }
        TemplateSupport s = TemplateSupport.of(on(build, os, host, a).guestReseed(true).build());
        assertEquals(verdict, s.level(), build + ": " + s.reason());
        TemplateSupport old = TemplateSupport.of(on(build, os, host, a).build());
        assertEquals(olderImage, old.level(), build + ": " + old.reason());
        if (verdict != TemplateSupport.Level.NONE) {
            List<String> template = QemuCommand.build(on(build, os, host, a).guestReseed(true).role(new VmRole.Template(
                    verdict == TemplateSupport.Level.SHARED_RAM ? Optional.of(RAM) : Optional.empty())).build());
            // q35 announces vmgenid (the kernel reseeds by itself); virt has none, the init reseeds
            assertEquals(QemuBuilds.guest(build) == Arch.X86_64, template.contains("vmgenid,guid=auto"), build);
        }
        if (olderImage == TemplateSupport.Level.NONE && verdict != TemplateSupport.Level.NONE) {
            assertTrue(old.reason().contains("no vmgenid device") && old.reason().contains("rebuild the image"),
                    old.reason());
            HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(on(build, os, host,
                    a).role(new VmRole.Template(Optional.empty())).build()));
            assertTrue(e.getMessage().contains("crng_reseed"), e.getMessage());
        }
        for (String arg : argv) {
            assertFalse(arg.equals("-nic") || arg.equals("-netdev") || arg.equals("-net"), build + ": " + arg);
        }
    }

    @Test
    void windowsTemplatesAreKnownImpossibleBeforeAnyVmStarts() {
        TemplateSupport whpx = TemplateSupport.of(on("windows-x86_64", HostOs.WINDOWS, Arch.X86_64, Accelerator.WHPX)
                .build());
        assertEquals(TemplateSupport.Level.NONE, whpx.level());
        assertTrue(whpx.reason().contains("WHPX blocks migration"), whpx.reason());
        // under TCG the same Windows build can save state, but has no RAM file to share
        TemplateSupport tcg = TemplateSupport.of(on("windows-x86_64", HostOs.WINDOWS, Arch.X86_64, Accelerator.TCG)
                .build());
        assertEquals(TemplateSupport.Level.FULL, tcg.level());
        assertTrue(tcg.reason().contains("memory-backend-file"), tcg.reason());
        HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(on("windows-x86_64",
                HostOs.WINDOWS, Arch.X86_64, Accelerator.TCG).role(new VmRole.Template(Optional.of(RAM))).build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e.problem());
        assertTrue(e.getMessage().contains("no memory-backend-file") && e.getMessage().contains("full-state"),
                e.getMessage());
        // the full-state template is built
        assertTrue(QemuCommand.build(on("windows-x86_64", HostOs.WINDOWS, Arch.X86_64, Accelerator.TCG)
                .role(new VmRole.Template(Optional.empty())).build()).contains("vmgenid,guid=auto"));
    }

    @Test
    @Tag("security")
    void aLinuxQemuWithoutSeccompIsRefusedNamingWhatToInstall() {
        QemuCapabilities debian = QemuBuilds.capabilities("debian-12-x86_64");
        Map<String, Set<String>> options = new HashMap<>(debian.commandLineOptions());
        options.remove("sandbox");
        QemuCapabilities noSeccomp = new QemuCapabilities(debian.accelerators(), debian.machines(), debian.objects(),
                debian.devices(), debian.machineOptions(), options);
        HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on("debian-12-x86_64", HostOs.LINUX, Arch.X86_64, Accelerator.TCG).capabilities(noSeccomp).build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e.problem());
        assertTrue(e.getMessage().contains("without seccomp") && e.getMessage().contains("libseccomp"),
                e.getMessage());
        // a seccomp group lacking a parameter qvm sets is refused too
        options.put("sandbox", Set.of("enable", "obsolete"));
        QemuCapabilities partial = new QemuCapabilities(debian.accelerators(), debian.machines(), debian.objects(),
                debian.devices(), debian.machineOptions(), options);
        assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on("debian-12-x86_64", HostOs.LINUX, Arch.X86_64, Accelerator.TCG).capabilities(partial).build()));
    }

    @Test
    void requiredDevicesAndOptionsMissingAreTypedErrors() {
        QemuCapabilities debian = QemuBuilds.capabilities("debian-12-x86_64");
        Set<String> devices = new java.util.HashSet<>(debian.devices());
        devices.remove("virtio-serial-pci");
        devices.remove("vmgenid");
        QemuCapabilities noSerial = new QemuCapabilities(debian.accelerators(), debian.machines(), debian.objects(),
                devices, debian.machineOptions(), debian.commandLineOptions());
        HostSetupException serial = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on("debian-12-x86_64", HostOs.LINUX, Arch.X86_64, Accelerator.TCG).capabilities(noSerial).build()));
        assertTrue(serial.getMessage().contains("no device virtio-serial-pci"), serial.getMessage());
        HostSetupException vmgenid = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on("debian-12-x86_64", HostOs.LINUX, Arch.X86_64, Accelerator.TCG).capabilities(noSerial)
                        .role(new VmRole.Template(Optional.empty())).build()));
        assertTrue(vmgenid.getMessage().contains("vmgenid"), vmgenid.getMessage());
        assertEquals(TemplateSupport.Level.NONE, TemplateSupport.of(on("debian-12-x86_64", HostOs.LINUX,
                Arch.X86_64, Accelerator.TCG).capabilities(noSerial).build()).level());
        // a q35 without the vmgenid device, with an image whose init reseeds: a template without the device
        QemuCapabilities noVmgenid = new QemuCapabilities(debian.accelerators(), debian.machines(), debian.objects(),
                debian.devices().stream().filter(d -> !d.equals("vmgenid")).collect(java.util.stream.Collectors.toSet()),
                debian.machineOptions(), debian.commandLineOptions());
        List<String> template = QemuCommand.build(on("debian-12-x86_64", HostOs.LINUX, Arch.X86_64, Accelerator.TCG)
                .capabilities(noVmgenid).guestReseed(true).role(new VmRole.Template(Optional.empty())).build());
        assertFalse(template.stream().anyMatch(x -> x.startsWith("vmgenid")), template::toString);
        assertEquals(TemplateSupport.Level.FULL, TemplateSupport.of(on("debian-12-x86_64", HostOs.LINUX,
                Arch.X86_64, Accelerator.TCG).capabilities(noVmgenid).guestReseed(true).build()).level());
        Map<String, Set<String>> options = new HashMap<>(debian.commandLineOptions());
        options.remove("action");
        HostSetupException action = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on("debian-12-x86_64", HostOs.LINUX, Arch.X86_64, Accelerator.TCG).capabilities(new QemuCapabilities(
                        debian.accelerators(), debian.machines(), debian.objects(), debian.devices(),
                        debian.machineOptions(), options)).build()));
        assertTrue(action.getMessage().contains("-action"), action.getMessage());
        // only the accelerators known (no probe): no argv at all
        assertThrows(HostSetupException.class, () -> QemuCommand.build(on("debian-12-x86_64", HostOs.LINUX,
                Arch.X86_64, Accelerator.TCG).capabilities(QemuCapabilities.acceleratorsOnly(Set.of(Accelerator.TCG)))
                .build()));
    }

    @Test
    void vsockNeedsVhostVsockWhichNoMacBuildHas() {
        SandboxConfig vsock = SandboxConfig.builder().transport(TransportPreference.VSOCK).build();
        HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on("homebrew-macos-x86_64-x86_64", HostOs.MACOS, Arch.X86_64, Accelerator.HVF)
                        .transport(new GuestTransport.Vsock(42, 5000)).config(vsock).build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e.problem());
        assertTrue(QemuCommand.build(on("debian-12-backports-x86_64", HostOs.LINUX, Arch.X86_64, Accelerator.KVM)
                .transport(new GuestTransport.Vsock(42, 5000)).config(vsock).build())
                .contains("vhost-vsock-device,guest-cid=42"));
    }

    @Test
    void hvfOnAarch64BeforeQemu7GetsHighmemOffAndAtMostThreeGib() {
        String old = "homebrew-macos-arm64-aarch64-qemu-6.2";
        List<String> argv = QemuCommand.build(on(old, HostOs.MACOS, Arch.AARCH64, Accelerator.HVF).build());
        assertEquals("virt,gic-version=max,usb=off,highmem=off", argv.get(argv.indexOf("-M") + 1));
        // from 7.0 virt fits its memory map to the vCPU's PA range: no highmem=off
        List<String> current = QemuCommand.build(on("homebrew-macos-arm64-aarch64", HostOs.MACOS, Arch.AARCH64,
                Accelerator.HVF).build());
        assertEquals(MachineProfile.VIRT, current.get(current.indexOf("-M") + 1));
        // TCG on the same old build is not affected
        List<String> tcg = QemuCommand.build(on(old, HostOs.MACOS, Arch.AARCH64, Accelerator.TCG).build());
        assertEquals(MachineProfile.VIRT, tcg.get(tcg.indexOf("-M") + 1));
        HostSetupException big = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on(old, HostOs.MACOS, Arch.AARCH64, Accelerator.HVF)
                        .config(SandboxConfig.builder().memoryMib(4096).build()).build()));
        assertTrue(big.getMessage().contains("highmem=off") && big.getMessage().contains("3072"), big.getMessage());
        // a build whose virt has no highmem property cannot be made safe: refused
        QemuCapabilities c = QemuBuilds.capabilities(old);
        QemuCapabilities noHighmem = new QemuCapabilities(c.accelerators(), c.machines(), c.objects(), c.devices(),
                Map.of("virt", Set.of("gic-version")), c.commandLineOptions());
        HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                on(old, HostOs.MACOS, Arch.AARCH64, Accelerator.HVF).capabilities(noHighmem).build()));
        assertTrue(e.getMessage().contains("upgrade QEMU to >= 7.0"), e.getMessage());
    }
}
