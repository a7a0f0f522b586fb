package io.qvm.release;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.FakeQemuHost;
import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The product's gate, driven through the real backend against {@code FakeQemu} — a peer that
 * plays QEMU and the guest on the real sockets and files (nothing boots): a sandbox that boots,
 * answers and renders passes the short suite and leaves nothing; a worker that renders what it
 * must refuse fails the corpus step, which ends the gate before the next architecture; a boot
 * that fails is recorded with its evidence. Every run ends with {@code nothing-left} checked.
 */
@Tag("unit")
@Tag("fault")
class HostGateTest {

    @TempDir
    Path tmp;

    StagedImages staged(Arch... archs) {
        Path root = tmp.resolve("staged/1.0");
        SyntheticImages images = new SyntheticImages(PackageLock.bundled());
        for (Arch a : archs) {
            images.build(a, root, tmp.resolve("cache"), line -> { });
        }
        return new StagedImages("1.0", root, List.of(archs));
    }

    HostGate gate(FakeQemuHost host, Set<Arch> full) {
        return new HostGate(new HostGate.Options(host::backend, FakeQemuHost.config().build(),
                FakeQemuHost.config().build(), Duration.ofSeconds(30), full, host.runtimeRoot(), true));
    }

    @Test
    void aSandboxThatBootsAnswersAndRendersPassesTheShortSuiteAndLeavesNothing() throws Exception {
        FakeQemuHost host = new FakeQemuHost(tmp.resolve("host")).set("renderPng", "64x48");
        GateResult r = gate(host, Set.of()).run(staged(Arch.X86_64), line -> { });

        assertTrue(r.ok(), r.steps().toString());
        assertEquals(List.of("x86_64:boot", "x86_64:handshake", "x86_64:render-svg", "x86_64:render-pdf", "x86_64:clones", "x86_64:stop",
                "x86_64:nothing-left"), r.steps().stream().map(ReleaseStep::name).toList());
        GateResult.Boot boot = r.boot(Arch.X86_64).orElseThrow();
        assertEquals("tcg", boot.accelerator());
        assertTrue(boot.phases().stream().anyMatch(p -> p.name().equals("worker-ready")), boot.toString());
        assertTrue(boot.phases().stream().anyMatch(p -> p.name().startsWith("guest:")), boot.toString());
        assertTrue(boot.readyMillis() > 0);
        assertTrue(r.steps().get(2).evidence().startsWith("hello.svg → 64x48 PNG"), r.steps().get(2).evidence());
        assertTrue(r.steps().get(1).evidence().contains("STATUS"), r.steps().get(1).evidence());
        assertEquals(4, host.boots(), "the cold boot, the template VM and two clones");
        assertAllGone(host);
    }

    @Test
    void aWorkerThatRendersWhatItMustRefuseFailsTheCorpusAndTheGateStopsThere() throws Exception {
        FakeQemuHost host = new FakeQemuHost(tmp.resolve("host")).set("renderPng", "64x48");
        GateResult r = gate(host, Set.of(Arch.X86_64)).run(staged(Arch.X86_64, Arch.AARCH64), line -> { });

        assertFalse(r.ok());
        assertEquals(List.of("x86_64:boot", "x86_64:handshake", "x86_64:render-corpus", "x86_64:nothing-left"),
                r.steps().stream().map(ReleaseStep::name).toList(), "no clone, no aarch64: the gate stopped");
        ReleaseStep failed = r.firstFailure().orElseThrow();
        assertEquals("x86_64:render-corpus", failed.name());
        assertTrue(failed.evidence().contains("hostile document xxe must be refused with UNSUPPORTED, got rendered 64x48"),
                failed.evidence());
        assertTrue(r.steps().get(3).ok(), "nothing was left: " + r.steps().get(3));
        assertAllGone(host);
    }

    @Test
    void aBootThatFailsIsRecordedWithItsEvidenceAndNothingIsLeft() throws Exception {
        FakeQemuHost host = new FakeQemuHost(tmp.resolve("host")).set("workerExitStatus", "3");
        GateResult r = gate(host, Set.of()).run(staged(Arch.X86_64), line -> { });

        assertEquals(List.of("x86_64:boot", "x86_64:nothing-left"), r.steps().stream().map(ReleaseStep::name).toList());
        ReleaseStep boot = r.steps().get(0);
        assertFalse(boot.ok());
        assertTrue(boot.evidence().startsWith("BootFailedException") && boot.evidence().contains("3"), boot.evidence());
        assertTrue(r.steps().get(1).ok(), r.steps().get(1).toString());
        assertTrue(r.boot(Arch.X86_64).isEmpty());
        assertAllGone(host);
    }

    private static void assertAllGone(FakeQemuHost host) throws Exception {
        await().atMost(Duration.ofSeconds(30)).until(() -> host.processes().stream().noneMatch(ProcessHandle::isAlive));
    }
}
