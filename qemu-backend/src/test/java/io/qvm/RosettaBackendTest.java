package io.qvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.probe.QemuLocator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The backend on an x86_64 JDK under Rosetta 2 (an Apple silicon Mac, reached through the
 * {@code os.name}/{@code os.arch} seam and a replayed {@code sysctl}; the QEMU is {@link FakeQemu}):
 * the refusal comes before the image is looked up, so a Mac without the x86_64 image is told about
 * Rosetta, not told to build an image it should not use, and no QEMU starts.
 */
@Tag("unit")
class RosettaBackendTest {

    @TempDir
    Path tmp;

    private QemuVmBackend.Builder underRosetta(FakeQemuHost host) {
        CommandRunner system = CommandRunner.system();
        CommandRunner mac = new CommandRunner() {
            @Override
            public Result run(List<String> argv, java.time.Duration deadline) {
                return argv.equals(List.of("/usr/sbin/sysctl", "-n", "sysctl.proc_translated"))
                        ? new Result(0, "1\n", "", false) : system.run(argv, deadline);
            }

            @Override
            public Result run(List<String> argv, String stdin, java.time.Duration deadline) {
                return system.run(argv, stdin, deadline); // the capability probe's QMP session
            }
        };
        QemuLocator locator = new QemuLocator(HostOs.MACOS, Map.of("QVM_QEMU", tmp.resolve("bin").toString()),
                p -> p.startsWith(tmp) && Files.isRegularFile(p) && Files.isExecutable(p));
        return host.backend().hostProbe(new HostProbe("Mac OS X", "x86_64", locator, mac))
                .imageDir(tmp.resolve("no-image")); // no x86_64 image: the old code said "build it"
    }

    @Test
    void autoUnderRosettaNamesRosettaNotTheMissingImageAndStartsNoQemu() throws Exception {
        FakeQemuHost host = new FakeQemuHost(tmp);
        try (QemuVmBackend backend = underRosetta(host).build()) {
            HostSetupException e = assertThrows(HostSetupException.class,
                    () -> backend.start(FakeQemuHost.config().accelerator(Accelerator.AUTO).build()));
            assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem(), e.getMessage());
            assertTrue(e.getMessage().contains("Rosetta 2"), e.getMessage());
            assertTrue(e.getMessage().contains("arm64 (aarch64) JDK"), e.getMessage());
            assertEquals(0, host.boots());
            HostSetupException choice = assertThrows(HostSetupException.class,
                    () -> backend.acceleratorChoice(FakeQemuHost.config().accelerator(Accelerator.AUTO).build()));
            assertTrue(choice.getMessage().contains("Rosetta 2"), choice.getMessage());
        }
    }
}
