package io.qvm.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import io.qvm.cli.CliContextAccess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The suite's slice of {@code qvm reliability} ({@link Reliability.Options#slice()}): real
 * sandboxes booted, rendering, loaded by two callers with hostile documents among the requests,
 * faulted (QEMU killed and frozen mid-request), and loaded again over HTTP through {@code qvm
 * serve}'s server by two clients for two tenants. Every case must hold and nothing may be left
 * behind; the full run is {@code ./qvm reliability}.
 */
@Tag("e2e")
@Tag("qemu")
@Tag("fault")
@Timeout(value = 40, unit = java.util.concurrent.TimeUnit.MINUTES)
class ReliabilitySliceE2ETest {

    @TempDir
    Path tmp;

    @Test
    void everyCategoryHoldsAndLeavesNothing() throws Exception {
        Path imageRoot = CliContextAccess.imageRoot();
        Assumptions.assumeTrue(Files.isDirectory(imageRoot.resolve("x86_64")), "no guest image at " + imageRoot);
        SandboxConfig config = SandboxConfig.builder().bootTimeout(Duration.ofMinutes(6))
                .requestTimeout(Duration.ofMinutes(3)).build();
        Reliability.Report r = new Reliability(() -> QemuVmBackend.builder().imageDir(imageRoot), tmp, config,
                line -> System.out.println("[reliability " + LocalTime.now().withNano(0) + "] " + line))
                .run(Reliability.Options.slice());
        String md = ReliabilityReport.markdown(r, "test host", "ReliabilitySliceE2ETest");
        System.out.println(md);
        ReliabilityReport.write(r, "test host", "ReliabilitySliceE2ETest", tmp.resolve("out"));
        assertTrue(Files.size(tmp.resolve("out").resolve("reliability.json")) > 0);
        assertEquals(List.of("boot", "render", "load", "fault", "serve"), r.categories().stream().map(Reliability.Category::name)
                .toList());
        for (Reliability.Category c : r.categories()) {
            assertTrue(c.tried() > 0, c.name() + " tried nothing");
            assertEquals(c.tried(), c.held(), c.name() + ": " + c.outcomes() + " " + c.notes());
            assertEquals(0, c.lost(), c.name() + ": " + c.notes());
            assertEquals(0, c.orphans(), c.name() + " left something behind");
        }
        assertTrue(r.allHeld(), md);
    }
}
