package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qvm.QemuVmBackend;
import io.qvm.RenderFailedException;
import io.qvm.SandboxConfig;
import io.qvm.SandboxLostException;
import io.qvm.SandboxPool;
import io.qvm.protocol.RenderResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole {@link HostileCorpus} through one real sandbox (VM, gVisor, worker with the guest's
 * default heap): every case gets its outcome and the same sandbox answers all of them — no
 * {@link SandboxLostException}, one sandbox id throughout. Prints the time per case (no timing
 * assertions). The host-side twin is {@code HostileCorpusTest} in renderer-worker.
 */
@Tag("e2e")
@Tag("qemu")
@Tag("security")
@Timeout(value = 30, unit = java.util.concurrent.TimeUnit.MINUTES)
class HostileCorpusE2ETest {

    @Test
    void everyCaseGetsItsOutcomeInOneSandbox() throws Exception {
        Path state = Files.createTempDirectory("qvm-e2e-hostile");
        List<String> wrong = new ArrayList<>();
        List<String> lost = new ArrayList<>();
        Set<String> sandboxes = new HashSet<>();
        StringBuilder table = new StringBuilder(String.format("%-26s %-22s %-16s %-16s %8s%n", "class", "case",
                "expected", "got", "ms"));
        try (QemuVmBackend backend = QemuVmBackend.builder().imageDir(io.qvm.e2e.E2e.imageRoot())
                .stateDirectory(state).progress(HostileCorpusE2ETest::log).build();
                SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.builder()
                        .bootTimeout(Duration.ofMinutes(6)).requestTimeout(Duration.ofMinutes(2)).build())
                        .maxSandboxes(1).minIdle(0).recycle(SandboxPool.Recycle.afterRequests(100_000)).build()) {
            pool.warmUp();
            for (HostileCase c : HostileCorpus.all()) {
                long t0 = System.nanoTime();
                String got = pool.withSandbox(s -> {
                    sandboxes.add(s.id());
                    try {
                        RenderResult r = s.render(c.request().get());
                        return c.width() != 0 && (r.width() != c.width() || r.height() != c.height())
                                ? "SIZE " + r.width() + "x" + r.height() : "OK";
                    } catch (RenderFailedException e) {
                        return e.code().name();
                    } catch (SandboxLostException e) {
                        lost.add(c + ": " + e.getMessage());
                        log("LOST " + c + "\n--- console ---\n" + e.consoleTail() + "\n--- stderr ---\n" + e.stderrTail());
                        return "LOST";
                    }
                });
                long ms = (System.nanoTime() - t0) / 1_000_000;
                table.append(String.format("%-26s %-22s %-16s %-16s %8d%n", c.attackClass(), c.name(), c.expected(),
                        got, ms));
                if (!got.equals(c.expected())) {
                    wrong.add(c + ", got " + got);
                }
            }
            log("\n" + table + "pool: " + pool.stats());
        } finally {
            try (var walk = Files.walk(state)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        assertEquals(List.of(), lost, "cases that cost the sandbox");
        assertEquals(1, sandboxes.size(), "sandboxes used: " + sandboxes);
        assertEquals(List.of(), wrong, "cases with another outcome");
    }

    static void log(String line) {
        System.out.println("[e2e " + LocalTime.now().withNano(0) + "] " + line);
    }
}
