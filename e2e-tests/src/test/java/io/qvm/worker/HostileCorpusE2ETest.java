package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.QemuVmBackend;
import io.qvm.RenderFailedException;
import io.qvm.SandboxConfig;
import io.qvm.SandboxLostException;
import io.qvm.SandboxPool;
import io.qvm.internal.sandbox.JvmCrashReport;
import io.qvm.protocol.RenderResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole {@link HostileCorpus} through one real sandbox (VM, gVisor, worker with the guest's
 * default heap): every case gets its outcome and the same sandbox answers all of them — no
 * {@link SandboxLostException} but the worker JVM's intermittent native crash (issue 11: at most once
 * per case, retried in a fresh sandbox, never out of memory, always with the JVM's fatal-error
 * report on the console), one sandbox id throughout otherwise. Prints the time per case (no timing
 * assertions) and every crash's report. The host-side twin is {@code HostileCorpusTest} in renderer-worker.
 *
 * <p>The suite's run leaves out {@link #SLOW}: four cases of classes that keep other cases here,
 * which took 97 s of the 181 s under TCG (2026-12-03). {@code HostileCorpusTest} runs them in
 * every suite; {@code -Dqvm.hostileCorpus=all} runs them in the guest too (README, Testing).
 */
@Tag("e2e")
@Tag("qemu")
@Tag("security")
@Timeout(value = 30, unit = java.util.concurrent.TimeUnit.MINUTES)
class HostileCorpusE2ETest {

    /** Left out of the suite's run unless {@code qvm.hostileCorpus=all}: attack class/name. */
    static final Set<String> SLOW = Set.of("pdf-decoded-stream/page-content-600mib",
            "svg-data-svg-image/entities-across-the-tree", "pdf-smask-size/ordinary-smask-2000",
            "svg-internal-entity/entity-nodes");

    /** The cases of this run: all, or all but {@link #SLOW}; every attack class keeps a case. */
    static List<HostileCase> cases(boolean all) {
        List<HostileCase> cases = HostileCorpus.all().stream()
                .filter(c -> all || !SLOW.contains(id(c))).toList();
        Set<String> classes = new HashSet<>();
        cases.forEach(c -> classes.add(c.attackClass()));
        for (HostileCase c : HostileCorpus.all()) {
            if (!classes.contains(c.attackClass())) {
                throw new IllegalStateException("the suite's run would have no case of " + c.attackClass());
            }
        }
        if (SLOW.stream().anyMatch(n -> HostileCorpus.all().stream().noneMatch(c -> n.equals(id(c))))) {
            throw new IllegalStateException("a name in SLOW is not in the corpus: " + SLOW);
        }
        return cases;
    }

    /** A case's name in {@link #SLOW}: attack class/name. */
    private static String id(HostileCase c) {
        return c.attackClass() + "/" + c.name();
    }

    @Test
    void everyCaseGetsItsOutcomeInOneSandbox() throws Exception {
        boolean all = "all".equals(System.getProperty("qvm.hostileCorpus"));
        List<HostileCase> cases = cases(all);
        log((all ? "every case: " : "every case but the " + SLOW.size() + " slow ones (-Dqvm.hostileCorpus=all runs "
                + "them): ") + cases.size() + " cases");
        Path state = Files.createTempDirectory("qvm-e2e-hostile");
        List<String> wrong = new ArrayList<>();
        List<String> lostTwice = new ArrayList<>();
        List<Crash> crashes = new ArrayList<>();
        Set<String> sandboxes = new HashSet<>();
        StringBuilder table = new StringBuilder(String.format("%-26s %-22s %-16s %-16s %8s%n", "class", "case",
                "expected", "got", "ms"));
        try (QemuVmBackend backend = QemuVmBackend.builder().imageDir(io.qvm.e2e.E2e.imageRoot())
                .stateDirectory(state).progress(HostileCorpusE2ETest::log).build();
                SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.builder()
                        .bootTimeout(Duration.ofMinutes(6)).requestTimeout(Duration.ofMinutes(2)).build())
                        .maxSandboxes(1).minIdle(0).recycle(SandboxPool.Recycle.afterRequests(100_000)).build()) {
            pool.warmUp();
            for (HostileCase c : cases) {
                long t0 = System.nanoTime();
                String got = attempt(pool, c, sandboxes, crashes);
                if (got.equals(LOST)) {
                    // The worker's JVM died under this case. Once is the intermittent native crash
                    // (issue 11) a SandboxPool absorbs with one retry; twice in a row is the case's.
                    got = attempt(pool, c, sandboxes, crashes);
                    if (got.equals(LOST)) {
                        lostTwice.add(c.toString());
                    }
                }
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
        log("sandboxes lost: " + crashes.size() + (crashes.isEmpty() ? "" : " " + crashes));
        assertEquals(List.of(), lostTwice, "cases that cost the sandbox twice in a row");
        for (Crash crash : crashes) {
            assertFalse(crash.outOfMemory(), "a worker out of memory is a missing limit: " + crash);
            assertTrue(crash.jvmFatalError(), "a lost sandbox must be the JVM's native crash, with its report: " + crash);
        }
        assertEquals(1 + crashes.size(), sandboxes.size(), "one sandbox, and one more per crash: " + sandboxes);
        assertEquals(List.of(), wrong, "cases with another outcome");
    }

    private static final String LOST = "LOST";

    /** One case in the pool's sandbox: its outcome, or {@link #LOST} with the crash recorded. */
    private static String attempt(SandboxPool pool, HostileCase c, Set<String> sandboxes, List<Crash> crashes) {
        return pool.withSandbox(s -> {
            sandboxes.add(s.id());
            try {
                RenderResult r = s.render(c.request().get());
                return c.width() != 0 && (r.width() != c.width() || r.height() != c.height())
                        ? "SIZE " + r.width() + "x" + r.height() : "OK";
            } catch (RenderFailedException e) {
                return e.code().name();
            } catch (SandboxLostException e) {
                // The backend names the JVM's fatal-error report in the message when the console
                // has one (JvmCrashReport, over the whole console, not only its tail).
                String message = e.getMessage();
                int report = message.indexOf(JvmCrashReport.CLAUSE);
                crashes.add(new Crash(c.toString(), e.outOfMemory(), report >= 0,
                        report < 0 ? "" : message.substring(report)));
                log("LOST " + c + ": " + message + "\n--- console (tail) ---\n" + e.consoleTail());
                return LOST;
            }
        });
    }

    /** A sandbox lost under a case: whether out of memory, whether the JVM printed its fatal-error report. */
    private record Crash(String testCase, boolean outOfMemory, boolean jvmFatalError, String report) {
    }

    static void log(String line) {
        System.out.println("[e2e " + LocalTime.now().withNano(0) + "] " + line);
    }
}
