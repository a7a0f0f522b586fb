package io.qvm.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderRequest;
import io.qvm.worker.DocumentRenderHandler;
import io.qvm.worker.Log;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The reliability run's hostile documents against the real renderer in this JVM (the guest runs
 * the same code under gVisor and TCG, slower): each gets the outcome its case names, and the
 * ones that time out do so at the render deadline, not by failing some other way.
 */
@Tag("unit")
class HostileDocumentsTest {

    /** A 3 s request deadline: the worker's render deadline is 2.7 s of it. */
    private static final Limits LIMITS = new Limits(32 << 20, 64 << 20, 50_000_000, 16384, 100, 3000);
    private static final long BUDGET_MILLIS = 2700;

    private final ByteArrayOutputStream log = new ByteArrayOutputStream();
    private final AtomicLong ids = new AtomicLong();

    @Test
    void everyHostileDocumentOfTheLoadGetsItsOutcomeFromTheRealRenderer() {
        List<String> wrong = new ArrayList<>();
        for (HostileDocuments.Case c : HostileDocuments.load()) {
            long t0 = System.nanoTime();
            String got = outcome(fresh(), c.request());
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (!c.accepts(got)) {
                wrong.add(c.name() + ": expected " + c.expected() + ", got " + got);
            } else if (got.equals("TIMEOUT") && ms < BUDGET_MILLIS) {
                wrong.add(c.name() + ": TIMEOUT after " + ms + " ms, before the render deadline");
            }
            assertTrue(c.request().document().length < 128 << 10, c.name() + " is small");
        }
        assertEquals(List.of(), wrong, log.toString(StandardCharsets.UTF_8));
    }

    /**
     * The PDF's fills stop at the deadline (PDFBox's operators poll the cancellation), so the worker
     * goes on. The turbulence is not asserted either way: Batik computes a filter tile without
     * looking at the halt flag, and when a tile takes longer than the watchdog's grace the worker
     * answers TIMEOUT and exits (status 4) for the host to replace it; here, at native speed, one
     * such run ended 504 ms after the deadline.
     */
    @Test
    void aWorkerWhosePdfTimedOutGoesOnRendering() {
        DocumentRenderHandler r = fresh();
        assertEquals("TIMEOUT", outcome(r, HostileDocuments.timesOut().get(1).request()));
        assertTrue(r.healthy(), log.toString(StandardCharsets.UTF_8));
        assertEquals("OK", outcome(r, RenderRequest.svg(Reliability.resource("warmup/hello.svg"))));
        assertEquals("OK", outcome(r, RenderRequest.pdf(Reliability.resource("warmup/hello.pdf"))));
    }

    @Test
    void theLoadMixHoldsEveryRefusedCaseAndEveryTimeOutOnceWithATimeOutFirst() {
        List<HostileDocuments.Case> mix = HostileDocuments.load();
        List<String> names = mix.stream().map(HostileDocuments.Case::name).toList();
        List<String> expected = new ArrayList<>();
        HostileDocuments.all().forEach(c -> expected.add(c.name()));
        HostileDocuments.timesOut().forEach(c -> expected.add(c.name()));
        assertEquals(expected.stream().sorted().toList(), names.stream().sorted().toList());
        assertEquals("TIMEOUT", mix.get(0).expected(), "a slice of the load meets a time-out");
    }

    @Test
    void onlyATimeOutAcceptsTheHostsDeadline() {
        HostileDocuments.Case slow = HostileDocuments.timesOut().get(0);
        HostileDocuments.Case refused = HostileDocuments.all().get(0);
        assertTrue(slow.accepts("TIMEOUT"));
        assertTrue(slow.accepts("LOST DEADLINE_EXCEEDED"));
        assertFalse(slow.accepts("LOST CRASHED"));
        assertFalse(slow.accepts("OK"));
        assertTrue(refused.accepts(refused.expected()));
        assertFalse(refused.accepts("LOST DEADLINE_EXCEEDED"));
        assertFalse(refused.accepts("OK"));
    }

    /** A renderer as the worker runs it, one per request as in the load's perRequest pool. */
    private DocumentRenderHandler fresh() {
        return new DocumentRenderHandler(new Log(new PrintStream(log, true, StandardCharsets.UTF_8)));
    }

    /** OK or the error code, as the reliability run names outcomes. */
    private String outcome(DocumentRenderHandler renderer, RenderRequest r) {
        Frame f = renderer.handle(Messages.toFrame(r, ids.incrementAndGet()), LIMITS);
        return f.kind() == FrameKind.ERROR ? Messages.errorReply(f).code().name() : "OK";
    }
}
