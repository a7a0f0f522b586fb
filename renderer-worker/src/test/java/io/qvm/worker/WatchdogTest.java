package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The per-request deadline and the render thread's failure modes. */
@Tag("unit")
@Timeout(120)
class WatchdogTest {

    private static final Renders R = new Renders();
    private static final Limits SHORT = new Limits(16 << 20, 8 << 20, 4_000_000, 4000, 20, 300);

    @Test
    void slowPdfIsStoppedWithTimeout() {
        byte[] slow = Pdfs.slow(400_000);
        Renders.Outcome o = R.render(RenderRequest.pdf(slow).withDpi(300), SHORT);
        assertEquals(ErrorCode.TIMEOUT, o.code(), o.toString());
        assertTrue(R.handler().healthy(), "the render thread stopped within its grace period after the deadline");
        assertTrue(R.stillServes());
    }

    @Test
    void slowSvgIsStoppedWithTimeout() {
        StringBuilder sb = new StringBuilder("<svg xmlns='http://www.w3.org/2000/svg' width='1900' height='1900'>"
                + "<filter id='b'><feGaussianBlur stdDeviation='40'/></filter>");
        for (int i = 0; i < 3000; i++) {
            sb.append("<circle cx='").append(i % 1900).append("' cy='").append(i * 7 % 1900)
                    .append("' r='300' fill='#").append(String.format("%06x", i * 2654435 & 0xFFFFFF))
                    .append("' filter='url(#b)' opacity='0.5'/>");
        }
        sb.append("</svg>");
        Renders.Outcome o = R.render(RenderRequest.svg(sb.toString().getBytes(StandardCharsets.UTF_8)), SHORT);
        assertEquals(ErrorCode.TIMEOUT, o.code(), o.toString());
        assertTrue(R.handler().healthy(), "Batik stopped at its halting checks");
        assertTrue(R.stillServes());
    }

    @Test
    void stackOverflowIsALimitNotACrash() {
        RenderWatchdog w = new RenderWatchdog();
        RenderException e = assertThrows(RenderException.class, () -> w.run(c -> recurse(0), 10_000));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, e.code());
        assertTrue(w.healthy());
    }

    @Test
    void aThreadThatIgnoresTheDeadlineMakesTheWorkerUnhealthy() {
        RenderWatchdog w = new RenderWatchdog();
        AtomicBoolean released = new AtomicBoolean();
        try {
            RenderException e = assertThrows(RenderException.class, () -> w.run(c -> {
                while (!released.get()) {
                    Thread.onSpinWait(); // ignores halt, interrupt and cancellation until the test ends
                }
                return null;
            }, 100));
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertFalse(w.healthy(), "a stuck render makes the worker exit after answering");
        } finally {
            released.set(true);
        }
    }

    @Test
    void budgetLeavesTheHostItsMargin() {
        assertEquals(19_000, RenderWatchdog.budgetMillis(20_000));
        assertEquals(270, RenderWatchdog.budgetMillis(300));
        assertEquals(1, RenderWatchdog.budgetMillis(1));
    }

    private static Rendered recurse(int n) {
        return n < 0 ? null : recurse(n + 1);
    }

    @Test
    void anOutOfMemoryErrorInARenderIsAnsweredLimitExceededAndTheWatchdogServesOn() throws Exception {
        RenderWatchdog w = new RenderWatchdog();
        long before = MemoryGuard.caught();
        // A real allocation the JVM refuses at once (above its array size limit): the render
        // thread ends with OutOfMemoryError, the heap is untouched, so the guard answers.
        RenderException e = assertThrows(RenderException.class, () -> w.run(c -> {
            long[] huge = new long[Integer.MAX_VALUE - 2];
            return new Rendered(new byte[huge.length > 0 ? 1 : 0], 1, 1);
        }, 60_000));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, e.code());
        assertEquals(before + 1, MemoryGuard.caught());
        assertTrue(w.healthy());
        assertEquals(3, w.run(c -> new Rendered(new byte[3], 1, 1), 60_000).png().length, "the next render runs");
    }
}
