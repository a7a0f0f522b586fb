package io.qvm.internal.qemu;

import io.qvm.HostSetupException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import io.qvm.RunscPlatform;
import io.qvm.SandboxConfig;
import io.qvm.protocol.image.Arch;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.QemuVersion;
import io.qvm.protocol.image.KernelCommandLine;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class QemuCommandTest {

    private static QemuCommandInput.Builder linuxTcg() {
        return GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, "7.2.22",
                "/usr/bin/qemu-system-x86_64");
    }

    private static String after(List<String> argv, String flag) {
        return argv.get(argv.indexOf(flag) + 1);
    }

    /**
     * The class-archive port is on every VM (a template and its clones must have the same
     * devices); only a boot that makes the archive has a file behind it and asks the init for it,
     * with half its deadline to do it in (adr/0018).
     */
    @Test
    void theClassArchivePortIsOnEveryVmAndOnlyAMakingBootAsksForIt() {
        List<String> plain = QemuCommand.build(linuxTcg().build());
        assertTrue(plain.contains("null,id=qvma"), String.valueOf(plain));
        assertTrue(plain.contains("virtserialport,chardev=qvma,name=qvm.archive"), String.valueOf(plain));
        assertFalse(after(plain, "-append").contains("qvm.class_archive"), after(plain, "-append"));

        List<String> making = QemuCommand.build(linuxTcg().classArchiveOut(Optional.of(Path.of("/state/s1/class-archive.jsa")))
                .config(io.qvm.SandboxConfig.builder().bootTimeout(java.time.Duration.ofSeconds(100)).build()).build());
        assertTrue(making.contains("file,id=qvma,path=/state/s1/class-archive.jsa"), String.valueOf(making));
        assertTrue(after(making, "-append").endsWith(" qvm.class_archive=make qvm.class_archive_seconds=50"),
                after(making, "-append"));
        List<String> long_ = QemuCommand.build(linuxTcg().classArchiveOut(Optional.of(Path.of("/a")))
                .config(io.qvm.SandboxConfig.builder().bootTimeout(java.time.Duration.ofMinutes(20)).build()).build());
        assertTrue(after(long_, "-append").endsWith(" qvm.class_archive_seconds=120"), "at most 120 s: " + after(long_, "-append"));

        QemuCommandInput clone = linuxTcg().classArchiveOut(Optional.of(Path.of("/a"))).build();
        assertThrows(IllegalArgumentException.class, () -> new QemuCommandInput(clone.hostOs(), clone.hostArch(),
                clone.guestArch(), clone.accelerator(), clone.qemuVersion(), clone.qemuBinary(), clone.capabilities(),
                clone.config(), clone.kernel(), clone.initrd(), clone.qmpSocket(), clone.consoleLog(), clone.eventsLog(),
                clone.pidFile(), clone.transport(), clone.controlSocket(), new VmRole.Clone(Optional.empty()),
                clone.runAs(), false, Optional.of(Path.of("/a"))), "a clone cannot make one");
        assertEquals(Optional.empty(), clone.withRole(new VmRole.Clone(Optional.empty())).classArchiveOut(),
                "a clone of a making input makes none");
    }

    /** Every machine option of the -M value, without the machine type. */
    private static Set<String> machineOptions(List<String> argv) {
        List<String> parts = List.of(after(argv, "-M").split(","));
        return Set.copyOf(parts.subList(1, parts.size()));
    }

    @Test
    @Tag("security")
    void q35SwitchesOffTheDevicesNoSandboxUses() {
        Set<String> q72 = machineOptions(QemuCommand.build(linuxTcg().build()));
        assertTrue(q72.containsAll(Set.of("vmport=off", "sata=off", "smbus=off", "usb=off", "i8042=off")), q72.toString());
        // QEMU 6.2 has no i8042 property: asking for it would be refused at start
        Set<String> q62 = machineOptions(QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64,
                Accelerator.TCG, "6.2.0", "/usr/bin/qemu-system-x86_64").build()));
        assertTrue(q62.containsAll(Set.of("vmport=off", "sata=off", "smbus=off", "usb=off")), q62.toString());
        assertTrue(q62.stream().noneMatch(o -> o.startsWith("i8042")), q62.toString());
        // kept: ACPI (power-off, vmgenid), the HPET (TCG's clock), graphics (off would turn on SeaBIOS's serial console)
        assertTrue(q72.stream().noneMatch(o -> o.startsWith("acpi") || o.startsWith("hpet") || o.startsWith("graphics")),
                q72.toString());
        Set<String> microvm = machineOptions(QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64,
                Accelerator.KVM, "7.2.22", "/usr/bin/qemu-system-x86_64").build()));
        assertTrue(microvm.contains("usb=off"), microvm.toString());
        Set<String> virt = machineOptions(QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.AARCH64, Arch.AARCH64,
                Accelerator.KVM, "7.2.22", "/usr/bin/qemu-system-aarch64").build()));
        assertTrue(virt.contains("usb=off"), virt.toString());
    }

    @Test
    @Tag("security")
    void aRootHostHasQemuDropToItsUserAndOnlyThenAllowsTheSetuidCalls() {
        List<String> user = QemuCommand.build(linuxTcg().build());
        assertTrue(!user.contains("-runas") && !user.contains("-run-with"), user.toString());
        assertEquals(QemuCommand.SECCOMP, after(user, "-sandbox"));
        List<String> root = QemuCommand.build(linuxTcg().runAs(java.util.Optional.of("qvm")).build());
        assertEquals("qvm", after(root, "-runas"));
        assertEquals(QemuCommand.SECCOMP_RUNAS, after(root, "-sandbox"));
        assertTrue(QemuCommand.SECCOMP_RUNAS.contains("elevateprivileges=allow")
                && QemuCommand.SECCOMP.contains("elevateprivileges=deny"));
        // -run-with user= where the build lists it (QMP query-command-line-options): bookworm-backports' 10.0
        List<String> newer = QemuCommand.build(linuxTcg().qemu(Path.of("/q"), QemuVersion.of("10.0.2"))
                .capabilities(io.qvm.internal.probe.QemuBuilds.capabilities("debian-12-backports-x86_64"))
                .runAs(java.util.Optional.of("qvm")).build());
        assertEquals("user=qvm", after(newer, "-run-with"));
        assertTrue(!newer.contains("-runas"));
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, assertThrows(HostSetupException.class,
                () -> QemuCommand.build(linuxTcg().runAs(java.util.Optional.of("qvm,chroot=/")).build())).problem());
    }

    private static QemuCommandInput.Builder linuxTcg(String qemuVersion) {
        return GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64, Accelerator.TCG, qemuVersion,
                "/usr/bin/qemu-system-x86_64");
    }

    @Test
    @Tag("security")
    void aCloneMapsTheTemplatesRamFromAFileItOpensReadOnly() {
        Path ram = Path.of("/t/ram");
        for (String version : List.of("8.2.0", "9.2.0", "10.0.2")) {
            String backend = after(QemuCommand.build(linuxTcg(version).role(new VmRole.Clone(java.util.Optional.of(ram)))
                    .build()), "-object");
            assertTrue(backend.endsWith(",share=off,readonly=on,rom=off"), version + ": " + backend);
        }
    }

    @Test
    @Tag("security")
    void aSharedRamCloneIsRefusedOnAQemuThatWouldOpenTheTemplatesRamReadWrite() {
        Path ram = Path.of("/t/ram");
        for (String version : List.of("7.2.22", "8.0.4", "8.1.5")) {
            HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(linuxTcg(version)
                    .role(new VmRole.Clone(java.util.Optional.of(ram))).build()), version);
            assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e.problem());
            assertTrue(e.getMessage().contains("read-write") && e.getMessage().contains("8.2"), e.getMessage());
        }
        // a full-state clone reads no RAM file at all: allowed on every QEMU
        assertFalse(QemuCommand.build(linuxTcg("7.2.22").role(new VmRole.Clone(java.util.Optional.empty())).build())
                .stream().anyMatch(a -> a.startsWith("memory-backend-file")));
    }

    @Test
    void aTemplateAndItsClonesGetTheSameMachine() {
        Path ram = Path.of("/t/ram");
        List<String> template = QemuCommand.build(linuxTcg("8.2.2").role(new VmRole.Template(java.util.Optional.of(ram))).build());
        List<String> clone = QemuCommand.build(linuxTcg("8.2.2").role(new VmRole.Clone(java.util.Optional.of(ram))).build());
        assertEquals(after(template, "-M"), after(clone, "-M"));
        assertEquals(after(template, "-accel"), after(clone, "-accel"));
        assertEquals(after(template, "-cpu"), after(clone, "-cpu"));
    }

    @Test
    void sizesComeFromTheConfig() {
        SandboxConfig c = SandboxConfig.builder().vcpus(4).memoryMib(3000).guestTmpMib(200)
                .runscPlatform(RunscPlatform.PTRACE).build();
        List<String> argv = QemuCommand.build(linuxTcg().config(c).build());
        assertEquals("4", after(argv, "-smp"));
        assertEquals("3000M", after(argv, "-m"));
        assertEquals("console=ttyS0 panic=-1 highres=off qvm.transport=serial qvm.port=qvm.worker qvm.control_port=qvm.control"
                + " qvm.events_port=qvm.events qvm.xmx_mib="
                + (3000 - 384 - 200) + " qvm.cpus=4 qvm.tmp_mib=200 qvm.platform=ptrace qvm.jit=c1", after(argv, "-append"));
    }

    /** The host side of the kernel command line contract: every qvm.* word names a key the init reads. */
    @Test
    void everyQvmWordOfEveryCommandLineIsAKeyOfTheContract() {
        Set<String> known = Arrays.stream(KernelCommandLine.Key.values()).map(KernelCommandLine.Key::key)
                .collect(Collectors.toSet());
        for (Map.Entry<String, QemuCommandInput> e : GoldenCases.all().entrySet()) {
            List<String> argv = QemuCommand.build(e.getValue());
            if (!argv.contains("-append")) {
                continue; // a clone: no kernel, no command line
            }
            String cmdline = after(argv, "-append");
            for (String word : cmdline.split(" ")) {
                if (word.startsWith(KernelCommandLine.PREFIX)) {
                    assertTrue(word.contains("=") && known.contains(word.substring(0, word.indexOf('='))),
                            e.getKey() + ": " + word);
                }
            }
            Map<String, String> keys = KernelCommandLine.parse(cmdline);
            assertEquals(GuestTransport.CONTROL_PORT_NAME, keys.get(KernelCommandLine.Key.CONTROL_PORT.key()),
                    e.getKey());
            assertTrue(Set.of(KernelCommandLine.TRANSPORT_SERIAL, KernelCommandLine.TRANSPORT_VSOCK)
                    .contains(keys.get(KernelCommandLine.Key.TRANSPORT.key())), e.getKey());
        }
    }

    /**
     * Timers on the tick only, and a worker JVM that compiles with C1 only, go to a guest under
     * TCG, whatever the host and the guest's architecture: a hardware accelerator's guest keeps
     * high-resolution timers and tiered compilation.
     */
    @Test
    void onlyAGuestUnderTcgLosesHighResolutionTimersAndC2() {
        Map<String, Boolean> expected = Map.of(
                "linux-x86_64-tcg", true,
                "linux-x86_64-tcg-template", true,
                "macos-aarch64-host-x86_64-guest-tcg", true,
                "linux-x86_64-kvm", false,
                "linux-x86_64-kvm-vsock", false,
                "macos-x86_64-hvf", false,
                "windows-x86_64-whpx", false,
                "macos-aarch64-hvf", false,
                "linux-aarch64-kvm", false,
                "linux-x86_64-host-aarch64-guest-tcg", true);
        Map<String, QemuCommandInput> cases = GoldenCases.all();
        for (Map.Entry<String, Boolean> e : expected.entrySet()) {
            QemuCommandInput in = cases.get(e.getKey());
            assertTrue(in != null, "no golden case " + e.getKey());
            List<String> words = Arrays.asList(after(QemuCommand.build(in), "-append").split(" "));
            assertEquals(e.getValue(), words.contains(MachineProfile.TCG_TIMERS), e.getKey() + ": " + words);
            // ... and so does the worker JVM's C1-only compiling (adr/0019).
            assertEquals(e.getValue() ? KernelCommandLine.JIT_C1 : KernelCommandLine.JIT_TIERED,
                    KernelCommandLine.parse(String.join(" ", words)).get(KernelCommandLine.Key.JIT.key()), e.getKey() + ": " + words);
            if (e.getValue()) {
                // The kernel's own words come before qvm's keys (CONTRACTS.md).
                assertEquals(2, words.indexOf(MachineProfile.TCG_TIMERS), e.getKey() + ": " + words);
            }
        }
        // Every TCG boot among the golden cases has it (a clone has no command line).
        for (Map.Entry<String, QemuCommandInput> e : cases.entrySet()) {
            List<String> argv = QemuCommand.build(e.getValue());
            if (argv.contains("-append") && after(argv, "-accel").startsWith("tcg")) {
                assertTrue(Arrays.asList(after(argv, "-append").split(" ")).contains(MachineProfile.TCG_TIMERS), e.getKey());
            }
        }
    }

    @Test
    void aarch64ConsoleIsTtyAma0() {
        List<String> argv = QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.AARCH64,
                Accelerator.TCG, "7.2.22", "/usr/bin/qemu-system-aarch64").build());
        assertTrue(after(argv, "-append").startsWith("console=ttyAMA0 panic=-1 "));
        assertEquals("max", after(argv, "-cpu"));
        assertEquals("virt,gic-version=max,usb=off", after(argv, "-M"));
        assertEquals("tcg,thread=single,tb-size=" + MachineProfile.TCG_TB_MIB, after(argv, "-accel"),
                "an aarch64 guest runs single-threaded TCG too (MachineProfile.accel: its JVM crashed multi-threaded)");
    }

    @Test
    void x86GuestOnArmHostIsSingleThreadedTcg() {
        List<String> argv = QemuCommand.build(GoldenCases.unix(HostOs.MACOS, Arch.AARCH64, Arch.X86_64,
                Accelerator.TCG, "9.2.0", "/opt/homebrew/bin/qemu-system-x86_64").build());
        assertEquals("tcg,thread=single,tb-size=" + MachineProfile.TCG_TB_MIB, after(argv, "-accel"));
    }

    @Test
    void tcgIsMultiThreadedForAnX86GuestOnAnX86HostFromQemu10AndSingleThreadedBefore() {
        for (String v : List.of("7.2.22", "8.2.2", "9.2.0")) {
            List<String> argv = QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64,
                    Accelerator.TCG, v, "/usr/bin/qemu-system-x86_64").build());
            assertEquals("tcg,thread=single,tb-size=" + MachineProfile.TCG_TB_MIB, after(argv, "-accel"), v);
        }
        for (String v : List.of("10.0.0", "10.0.2", "10.1.1")) {
            List<String> argv = QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64,
                    Accelerator.TCG, v, "/usr/bin/qemu-system-x86_64").build());
            assertEquals("tcg,thread=multi,tb-size=" + MachineProfile.TCG_TB_MIB, after(argv, "-accel"),
                    v + ": JitStressE2ETest crashed no multi-threaded boot on 10.0.2 (MachineProfile.accel)");
        }
        Path ram = Path.of("/home/u/.cache/qvm/templates/t/ram");
        List<String> template = QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64,
                Accelerator.TCG, "10.0.2", "/usr/bin/qemu-system-x86_64")
                .role(new VmRole.Template(java.util.Optional.of(ram))).build());
        assertEquals("tcg,thread=multi,tb-size=" + MachineProfile.TCG_TB_MIB, after(template, "-accel"),
                "a template boots like a cold boot");
        List<String> clone = QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.X86_64,
                Accelerator.TCG, "10.0.2", "/usr/bin/qemu-system-x86_64")
                .role(new VmRole.Clone(java.util.Optional.of(ram))).build());
        assertEquals("tcg,thread=single,tb-size=" + MachineProfile.TCG_TB_MIB, after(clone, "-accel"),
                "clones run side by side, each on at most one host core (MachineProfile.accel(VmRole))");
        List<String> arm = QemuCommand.build(GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.AARCH64,
                Accelerator.TCG, "10.0.2", "/usr/bin/qemu-system-aarch64").build());
        assertEquals("tcg,thread=single,tb-size=" + MachineProfile.TCG_TB_MIB, after(arm, "-accel"),
                "an emulated aarch64 guest stays single-threaded: its JVM crashed multi-threaded on 7.2, unmeasured on 10");
    }

    @Test
    void socketPathsLongerThan103BytesAreRejected() {
        String longDir = "/tmp/" + "d".repeat(90);
        Path ok = Path.of("/tmp/" + "s".repeat(98));
        assertEquals(103, ok.toString().length());
        QemuCommand.build(linuxTcg().qmpSocket(ok).build());
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> QemuCommand.build(linuxTcg().qmpSocket(Path.of(longDir + "/qmp.sock")).build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e.problem());
        assertTrue(e.getMessage().startsWith("qmpSocket path is 104 bytes, longer than the 103"), e.getMessage());
        HostSetupException e2 = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                linuxTcg().transport(new GuestTransport.Serial(Path.of(longDir + "/wrk.sock"))).build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e2.problem());
        assertTrue(e2.getMessage().startsWith("serial socket path is 104 bytes"), e2.getMessage());
        // bytes, not chars: 52 two-byte characters are 104 bytes
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, assertThrows(HostSetupException.class,
                () -> QemuCommand.build(linuxTcg().qmpSocket(Path.of("é".repeat(52))).build())).problem());
    }

    @Test
    void commasInPathsAreDoubled() {
        List<String> argv = QemuCommand.build(linuxTcg().consoleLog(Path.of("/tmp/a,b/console.log"))
                .qmpSocket(Path.of("/tmp/a,b/qmp.sock")).build());
        assertTrue(argv.contains("file,id=con,path=/tmp/a,,b/console.log"), argv.toString());
        assertTrue(argv.contains("socket,id=qmp,path=/tmp/a,,b/qmp.sock,server=on,wait=off"), argv.toString());
    }

    @Test
    void vsockOnlyOnLinux() {
        HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                GoldenCases.unix(HostOs.MACOS, Arch.AARCH64, Arch.AARCH64, Accelerator.HVF, "9.2.0", "/q")
                        .transport(new GuestTransport.Vsock(3, 5000)).build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e.problem());
        assertTrue(e.getMessage().contains("use transport SERIAL"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new GuestTransport.Vsock(2, 5000));
        assertThrows(IllegalArgumentException.class, () -> new GuestTransport.Vsock(0xFFFF_FFFFL, 5000));
    }

    @Test
    void vsockPortGoesOnTheKernelCommandLine() {
        List<String> argv = QemuCommand.build(linuxTcg().transport(new GuestTransport.Vsock(7, 6000)).build());
        assertTrue(after(argv, "-append").contains(" qvm.transport=vsock qvm.vsock_port=6000 "));
        assertTrue(argv.contains("vhost-vsock-pci,guest-cid=7"), argv.toString());
        // no worker port on virtio-serial, only the init's control port
        assertTrue(argv.stream().noneMatch(a -> a.startsWith("virtserialport,chardev=qvmw")), argv.toString());
        assertTrue(argv.contains("virtserialport,chardev=qvmc,name=qvm.control"), argv.toString());
    }

    @Test
    void versionGates() {
        assertTrue(QemuCommand.build(linuxTcg().build()).contains("panic=exit-failure"));
        List<String> old = QemuCommand.build(linuxTcg().qemu(Path.of("/q"), QemuVersion.of("7.0.0")).build());
        assertEquals("panic=shutdown", after(old, "-action"));
        HostSetupException tooOld = assertThrows(HostSetupException.class,
                () -> QemuCommand.build(linuxTcg().qemu(Path.of("/q"), QemuVersion.of("5.2.0")).build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, tooOld.problem());
        assertTrue(tooOld.getMessage().contains("qvm needs QEMU >= 6.0.0"), tooOld.getMessage());
        QemuCommandInput winOld = GoldenCases.all().get("windows-x86_64-whpx");
        HostSetupException w = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                new QemuCommandInput(winOld.hostOs(), winOld.hostArch(), winOld.guestArch(), winOld.accelerator(),
                        QemuVersion.of("7.0.0"), winOld.qemuBinary(), winOld.capabilities(), winOld.config(),
                        winOld.kernel(),
                        winOld.initrd(), winOld.qmpSocket(), winOld.consoleLog(), winOld.eventsLog(), winOld.pidFile(),
                        winOld.transport(), winOld.controlSocket(), winOld.role(), winOld.runAs(), false,
                        java.util.Optional.empty())));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, w.problem());
        assertTrue(w.getMessage().contains("unix-socket chardevs"), w.getMessage());
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, assertThrows(HostSetupException.class, () -> QemuCommand.build(
                GoldenCases.unix(HostOs.MACOS, Arch.AARCH64, Arch.AARCH64, Accelerator.HVF, "6.1.0", "/q").build())).problem());
    }

    @Test
    void seccompOnlyOnLinux() {
        assertTrue(QemuCommand.build(linuxTcg().build()).contains("-sandbox"));
        for (String name : List.of("macos-aarch64-hvf", "windows-x86_64-whpx")) {
            assertTrue(!QemuCommand.build(GoldenCases.all().get(name)).contains("-sandbox"), name);
        }
    }

    @Test
    void autoAndForeignHardwareAcceleratorsAreRejected() {
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, assertThrows(HostSetupException.class,
                () -> QemuCommand.build(linuxTcg().accelerator(Accelerator.AUTO).build())).problem());
        HostSetupException e = assertThrows(HostSetupException.class, () -> QemuCommand.build(
                GoldenCases.unix(HostOs.LINUX, Arch.X86_64, Arch.AARCH64, Accelerator.KVM, "7.2.22", "/q").build()));
        assertEquals(HostSetupException.Problem.QEMU_UNSUPPORTED, e.problem());
        assertTrue(e.getMessage().contains("use TCG"), e.getMessage());
    }

    @Test
    void pureFunction() {
        QemuCommandInput in = linuxTcg().build();
        assertEquals(QemuCommand.build(in), QemuCommand.build(in));
    }
}
