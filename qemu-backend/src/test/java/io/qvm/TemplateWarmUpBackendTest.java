package io.qvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A template VM renders qvm's warm-up documents before it is saved (so every clone inherits a
 * worker that has), through the real backend against the fake QEMU and its fake worker: the
 * renders come after READY and before the migration, a document the worker refuses does not stop
 * the build, the boot deadline's margin stops the warm-up, and a worker lost while warming fails
 * the build the way a failed boot does.
 */
@Tag("unit")
class TemplateWarmUpBackendTest extends FakeQemuFixture {

    /** The warm-up documents, in order (TemplateWarmUp.DOCUMENTS). */
    private static final List<String> DOCUMENTS = List.of("text.svg", "shapes.svg", "page.pdf");

    @Test
    void theTemplateVmRendersEachWarmUpDocumentBeforeItIsSaved() throws Exception {
        host.set("renderPng", "8x8");
        List<String> said = new CopyOnWriteArrayList<>();
        try (QemuVmBackend backend = host.backend().progress(said::add).build();
             Sandbox s = backend.start(FakeQemuHost.config().build())) {
            assertTrue(s.bootReport().restored(), s.bootReport()::toString);
        }
        List<String> log = host.vmLog();
        int migrate = log.indexOf("qmp migrate");
        assertTrue(migrate > 0, "the template was saved: " + log);
        List<String> renders = log.subList(0, migrate).stream().filter(l -> l.startsWith("worker RENDER")).toList();
        assertEquals(DOCUMENTS.stream().map(d -> "worker RENDER " + size(d) + " B").toList(), renders,
                "each document once, in order, before the save: " + log);
        assertFalse(log.subList(migrate, log.size()).stream().anyMatch(l -> l.startsWith("worker RENDER")),
                "a clone is not warmed again by the backend: " + log);
        assertTrue(said.stream().anyMatch(l -> l.contains("warmed: 3 renders")), said::toString);
    }

    @Test
    void offTheTemplateVmRendersNothingAndIsAnotherTemplate() throws Exception {
        host.set("renderPng", "8x8");
        String warmed;
        try (QemuVmBackend backend = host.backend().build()) {
            warmed = backend.templateKey(FakeQemuHost.config().build()).id();
        }
        try (QemuVmBackend backend = host.backend().templateWarmUp(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().build())) {
            assertTrue(s.bootReport().restored(), s.bootReport()::toString);
            String id = s.bootReport().template().orElseThrow();
            assertEquals(backend.templateKey(FakeQemuHost.config().build()).id(), id);
            assertFalse(id.equals(warmed), "an unwarmed template is never restored for a warmed one");
        }
        assertFalse(host.vmLog().stream().anyMatch(l -> l.startsWith("worker RENDER")), host.vmLog()::toString);
    }

    @Test
    void aDocumentTheWorkerRefusesIsSaidAndTheTemplateIsStillSaved() throws Exception {
        // the fake worker answers RENDER with ERROR UNSUPPORTED unless told to render
        List<String> said = new CopyOnWriteArrayList<>();
        try (QemuVmBackend backend = host.backend().progress(said::add).build();
             Sandbox s = backend.start(FakeQemuHost.config().build())) {
            assertTrue(s.bootReport().restored(), s.bootReport()::toString);
            assertEquals(1, backend.templateStore().list().size());
        }
        for (String d : DOCUMENTS) {
            assertTrue(said.stream().anyMatch(l -> l.startsWith("warm-up document " + d + " refused (UNSUPPORTED)")),
                    d + ": " + said);
        }
        assertTrue(said.stream().anyMatch(l -> l.contains("warmed: 0 renders")), said::toString);
    }

    @Test
    void theWarmUpLeavesTheBootDeadlineItsMargin() throws Exception {
        host.set("renderPng", "8x8");
        List<String> said = new CopyOnWriteArrayList<>();
        // 35 s, and a template boot of over 6 s: under the 30 s a warm-up render needs left (the
        // margin's floor). No class archive: its make would add its own time to the deadline.
        host.set("slowBootFrom", "1");
        host.set("slowBootMillis", "6000");
        try (QemuVmBackend backend = host.backend().classArchives(false).progress(said::add).build();
             Sandbox s = backend.start(FakeQemuHost.config().bootTimeout(Duration.ofSeconds(35)).build())) {
            assertTrue(s.bootReport().restored(), s.bootReport()::toString);
        }
        assertFalse(host.vmLog().stream().anyMatch(l -> l.startsWith("worker RENDER")), host.vmLog()::toString);
        assertTrue(said.stream().anyMatch(l -> l.contains("warmed: 0 renders") && l.contains("cut short")),
                said::toString);
    }

    @Test
    void aRenderIsStartedOnlyWithRoomForOneAsLongAsTheLongestSoFar() throws Exception {
        host.set("renderPng", "8x8");
        host.set("renderMillis", "8000");
        List<String> said = new CopyOnWriteArrayList<>();
        // 50 s, less the 30 s margin: 20 s less the boot for warming, at 8 s a render. The first
        // starts (if the boot took under 20 s), a third never can (it would need 24 s).
        try (QemuVmBackend backend = host.backend().classArchives(false).progress(said::add).build();
             Sandbox s = backend.start(FakeQemuHost.config().bootTimeout(Duration.ofSeconds(50)).build())) {
            assertTrue(s.bootReport().restored(), s.bootReport()::toString);
        }
        long renders = host.vmLog().stream().filter(l -> l.startsWith("worker RENDER")).count();
        assertTrue(renders >= 1 && renders <= 2, "renders: " + host.vmLog());
        assertTrue(said.stream().anyMatch(l -> l.contains("warmed: " + renders + " renders") && l.contains("cut short")),
                said::toString);
    }

    @Test
    void aTimeoutEndsTheWarmUpAndTheTemplateIsSavedOnceTheWorkerProvesItStillAnswers() throws Exception {
        host.set("renderError", "TIMEOUT");
        List<String> said = new CopyOnWriteArrayList<>();
        try (QemuVmBackend backend = host.backend().progress(said::add).build();
             Sandbox s = backend.start(FakeQemuHost.config().build())) {
            assertTrue(s.bootReport().restored(), s.bootReport()::toString);
        }
        List<String> log = host.vmLog();
        List<String> beforeSave = log.subList(0, log.indexOf("qmp migrate"));
        assertEquals(1, beforeSave.stream().filter(l -> l.startsWith("worker RENDER")).count(),
                "no render after the TIMEOUT: " + log);
        assertTrue(said.stream().anyMatch(l -> l.startsWith("warm-up document text.svg refused (TIMEOUT)")), said::toString);
        assertTrue(said.stream().anyMatch(l -> l.contains("warmed: 0 renders") && l.contains("cut short")),
                said::toString);
    }

    @Test
    void aWorkerLostWhileWarmingFailsTheBuildAndTheSandboxColdBoots() throws Exception {
        host.set("firstReply", "stall"); // 10 bytes of the first answer after READY, then nothing
        List<String> said = new CopyOnWriteArrayList<>();
        try (QemuVmBackend backend = host.backend().progress(said::add).build();
             Sandbox s = backend.start(FakeQemuHost.config().frameStallTimeout(Duration.ofSeconds(1)).build())) {
            assertFalse(s.bootReport().restored(), s.bootReport()::toString);
            assertEquals(0, backend.templateStore().list().size(), "no template was kept");
        }
        assertTrue(said.stream().anyMatch(l -> l.contains("cannot build a shared-ram template")), said::toString);
    }

    private static int size(String document) {
        try (InputStream in = TemplateWarmUpBackendTest.class.getResourceAsStream("/io/qvm/warmup/" + document)) {
            return in.readAllBytes().length;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
