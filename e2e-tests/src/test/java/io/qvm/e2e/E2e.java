package io.qvm.e2e;

import static org.junit.jupiter.api.Assertions.fail;

import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import io.qvm.backend.image.GuestImage;
import io.qvm.backend.probe.Arch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.List;
import java.util.stream.Collectors;

/** Shared set-up of the end-to-end tests: the real image, a private state directory, visible progress. */
final class E2e {

    private E2e() {
    }

    /** The image the suite boots; `./qvm test` builds it before the tests run. */
    static Path imageRoot() {
        Path root = GuestImage.defaultRoot();
        Arch arch = Arch.fromOsArch(System.getProperty("os.arch")).orElseThrow();
        if (!Files.isDirectory(root.resolve(arch.qemuName()))) {
            fail("no guest image at " + root.resolve(arch.qemuName()) + ": build it with ./qvm image build "
                    + "(./qvm test does this before running the tests)");
        }
        return root;
    }

    static QemuVmBackend backend(Path stateDir) {
        return QemuVmBackend.builder()
                .imageDir(imageRoot())
                .stateDirectory(stateDir)
                .progress(line -> log(line))
                .build();
    }

    /** Defaults, with deadlines generous enough for TCG on a busy 2-core machine. */
    static SandboxConfig.Builder config() {
        return SandboxConfig.builder()
                .bootTimeout(Duration.ofMinutes(6))
                .requestTimeout(Duration.ofMinutes(3));
    }

    static void log(String line) {
        System.out.println("[e2e " + LocalTime.now().withNano(0) + "] " + line);
        System.out.flush();
    }

    /** Pids of live processes whose command line mentions {@code needle} (e.g. a state directory). */
    static List<Long> processesMentioning(String needle) {
        return ProcessHandle.allProcesses()
                .filter(p -> p.pid() != ProcessHandle.current().pid())
                .filter(p -> p.info().commandLine().map(c -> c.contains(needle)).orElse(false))
                .map(ProcessHandle::pid)
                .collect(Collectors.toList());
    }
}
