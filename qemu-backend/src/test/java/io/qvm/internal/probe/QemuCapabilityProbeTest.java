package io.qvm.internal.probe;

import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.host.QemuCapabilities;

import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The capability probe against the answers of the QEMU builds users install
 * ({@link QemuBuilds}: recorded or derived), its cache, and the stdin its QMP session needs.
 */
@Tag("unit")
class QemuCapabilityProbeTest {

    /** The matrix the README shows: what each build has that qvm's argv depends on. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        // build,                              accelerators, seccomp, run-with user, memory-backend-file, vmgenid, q35 i8042, virt highmem, recorded
        "debian-12-x86_64,                     tcg kvm,   true,  false, true,  true,  true,  false, true",
        "debian-12-aarch64,                    tcg,       true,  false, true,  false, false, true,  true",
        "debian-12-backports-x86_64,           tcg kvm,   true,  true,  true,  true,  true,  false, true",
        "debian-12-backports-aarch64,          tcg,       true,  true,  true,  false, false, true,  true",
        "fedora-42-x86_64,                     tcg kvm,   true,  true,  true,  true,  true,  false, false",
        "ubuntu-22.04-x86_64,                  tcg kvm,   true,  false, true,  true,  false, false, false",
        "ubuntu-24.04-x86_64,                  tcg kvm,   true,  false, true,  true,  true,  false, false",
        "homebrew-macos-arm64-aarch64,         tcg hvf,   false, true,  true,  false, false, true,  false",
        "homebrew-macos-arm64-aarch64-qemu-6.2, tcg hvf,  false, false, true,  false, false, true,  false",
        "homebrew-macos-arm64-x86_64,          tcg,       false, true,  true,  true,  true,  false, false",
        "homebrew-macos-x86_64-x86_64,         tcg hvf,   false, true,  true,  true,  true,  false, false",
        "windows-x86_64,                       tcg whpx,  false, false, false, true,  true,  false, false",
    })
    void eachBuildReportsWhatItsConfigurationHas(String build, String accels, boolean seccomp, boolean runWithUser,
            boolean ramFile, boolean vmgenid, boolean i8042, boolean highmem, boolean recorded) {
        QemuCapabilities c = QemuBuilds.capabilities(build);
        Set<Accelerator> want = new java.util.HashSet<>();
        for (String a : accels.split(" ")) {
            want.add(Accelerator.parse(a));
        }
        assertEquals(want, c.accelerators(), build);
        assertEquals(seccomp, c.hasOption("sandbox"), build + " -sandbox");
        assertEquals(runWithUser, c.optionHas("run-with", "user"), build + " -run-with user=");
        assertEquals(ramFile, c.hasObject("memory-backend-file"), build + " memory-backend-file");
        assertEquals(vmgenid, c.hasDevice("vmgenid"), build + " vmgenid");
        assertEquals(i8042, c.machineHas("q35", "i8042"), build + " q35 i8042");
        assertEquals(highmem, c.machineHas("virt", "highmem"), build + " virt highmem");
        assertEquals(recorded, QemuBuilds.recorded(build), build + " recorded");
        assertTrue(c.hasOption("action"), build + " -action");
        String serial = QemuBuilds.guest(build) == Arch.AARCH64 ? "virtio-serial-device" : "virtio-serial-pci";
        assertTrue(c.hasDevice(serial) && c.hasDevice("virtserialport"), build + " " + serial);
        assertEquals(!build.startsWith("homebrew") && !build.startsWith("windows"), c.hasDevice("vhost-vsock-pci"),
                build + " vhost-vsock (Linux only)");
    }

    @Test
    void everyBuildDirectoryIsInTheMatrixAndSaysWhereItCameFrom() {
        assertEquals(12, QemuBuilds.all().size(), QemuBuilds.all().toString());
        for (String b : QemuBuilds.all()) {
            String source = QemuBuilds.text(b, "SOURCE.md");
            assertTrue(source.contains("**Recorded**") != source.contains("**Derived**"), b);
        }
    }

    @Test
    void aBinaryIsAskedOnceAndThenReadFromTheCacheByItsIdentity(@TempDir Path tmp) throws Exception {
        Path bin = Files.writeString(tmp.resolve("qemu-system-x86_64"), "a QEMU build");
        ProbeCache cache = new ProbeCache(tmp.resolve("probe-cache.json"), Duration.ofDays(7), Clock.systemUTC());
        AtomicInteger runs = new AtomicInteger();
        String version = QemuBuilds.text("debian-12-x86_64", "version.txt");
        QemuCapabilities first = new QemuCapabilityProbe(QemuBuilds.replay("debian-12-x86_64", runs), cache)
                .capabilities(QemuCapabilityProbe.Identity.of(bin, version), Arch.X86_64);
        assertEquals(7, runs.get(), "accel, machine, object, device, q35, microvm, QMP");
        // another process: a fresh probe (the in-JVM memory is keyed the same, so use a new file identity
        // check through the cache alone)
        AtomicInteger none = new AtomicInteger();
        CommandRunner refuses = (argv, d) -> {
            none.incrementAndGet();
            throw new AssertionError("asked again: " + argv);
        };
        assertEquals(first, cache.capabilities(QemuCapabilityProbe.Identity.of(bin, version).key()).orElseThrow());
        assertEquals(first, new QemuCapabilityProbe(refuses, cache)
                .capabilities(QemuCapabilityProbe.Identity.of(bin, version), Arch.X86_64));
        assertEquals(0, none.get());
        // an upgrade: another version line (and size) is another identity, asked again
        Files.writeString(bin, "a newer QEMU build");
        AtomicInteger again = new AtomicInteger();
        QemuCapabilities upgraded = new QemuCapabilityProbe(QemuBuilds.replay("debian-12-backports-x86_64", again),
                cache).capabilities(QemuCapabilityProbe.Identity.of(bin,
                        QemuBuilds.text("debian-12-backports-x86_64", "version.txt")), Arch.X86_64);
        assertEquals(7, again.get());
        assertTrue(upgraded.optionHas("run-with", "user") && !first.optionHas("run-with", "user"));
    }

    @Test
    void theHostProbeReadsTheCapabilitiesThroughTheProbeCache(@TempDir Path tmp) throws Exception {
        Path bin = Files.writeString(tmp.resolve("qemu-system-x86_64"), "another QEMU build " + System.nanoTime());
        AtomicInteger runs = new AtomicInteger();
        CommandRunner replay = QemuBuilds.replay("windows-x86_64", runs);
        // the locator names binaries the Linux way (no .exe): it is not what this test is about
        QemuLocator locator = new QemuLocator(HostOs.LINUX, Map.of("QVM_QEMU", tmp.toString()),
                p -> p.equals(bin));
        ProbeCache cache = new ProbeCache(tmp.resolve("c.json"), Duration.ofDays(7), Clock.systemUTC());
        HostInfo h = new HostProbe("Windows 11", "amd64", locator, replay, cache).probe();
        QemuInstallation q = h.requireQemu(Arch.X86_64);
        assertEquals(Set.of(Accelerator.TCG, Accelerator.WHPX), q.compiledIn());
        assertTrue(!q.capabilities().hasObject("memory-backend-file") && !q.capabilities().hasOption("sandbox"));
        int afterFirst = runs.get();
        new HostProbe("Windows 11", "amd64", locator, replay, cache).probe();
        assertEquals(afterFirst + 1, runs.get(), "only --version the second time");
        assertTrue(Files.readString(cache.file()).contains("\"qemu\""));
    }

    @Test
    void aBinaryThatDoesNotAnswerLikeQemuIsATypedError(@TempDir Path tmp) {
        CommandRunner broken = new CommandRunner() {
            @Override
            public Result run(List<String> argv, Duration deadline) {
                return new Result(0, "hello", "", false);
            }

            @Override
            public Result run(List<String> argv, String stdin, Duration deadline) {
                return new Result(0, "", "", false);
            }
        };
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> new QemuCapabilityProbe(broken, null).ask(tmp.resolve("q"), Arch.X86_64));
        assertEquals(HostSetupException.Problem.QEMU_NOT_FOUND, e.problem());
        assertTrue(e.getMessage().contains("does not answer as QEMU does"), e.getMessage());
        CommandRunner failing = (argv, d) -> new CommandRunner.Result(1, "", "qemu: cannot load module", false);
        HostSetupException f = assertThrows(HostSetupException.class,
                () -> new QemuCapabilityProbe(failing, null).ask(tmp.resolve("q"), Arch.X86_64));
        assertTrue(f.getMessage().contains("-accel help failed (exit 1): qemu: cannot load module"), f.getMessage());
    }

    @Test
    void theSystemRunnerWritesTheSessionToTheProcessesInput() {
        CommandRunner.Result r = CommandRunner.system().run(List.of("cat"), QemuCapabilityProbe.QMP_SESSION,
                Duration.ofSeconds(30));
        assertTrue(r.ok(), r.toString());
        assertEquals(QemuCapabilityProbe.QMP_SESSION, r.stdout());
    }

    @Test
    void theCacheFormRoundTrips() {
        for (String b : QemuBuilds.all()) {
            QemuCapabilities c = QemuBuilds.capabilities(b);
            assertEquals(c, QemuCapabilities.fromJson(c.toJson()), b);
        }
    }
}
