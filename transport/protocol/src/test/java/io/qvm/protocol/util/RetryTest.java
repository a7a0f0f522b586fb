package io.qvm.protocol.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class RetryTest {

    private static final Duration HOUR = Duration.ofHours(1);
    private static final Duration MS = Duration.ofMillis(1);

    @Test
    void aFreshRetryHasTimeLeftAndALapsedOneHasNone() {
        Retry open = Retry.until(HOUR, MS, MS, () -> true);
        assertFalse(open.expired());
        assertTrue(open.remainingNanos() > 0 && open.remainingNanos() <= HOUR.toNanos());

        Retry lapsed = Retry.until(Duration.ZERO, MS, MS, () -> true);
        assertTrue(lapsed.expired());
        assertEquals(0, lapsed.remainingNanos());
        assertTrue(Retry.until(Duration.ofSeconds(-5), MS, MS, () -> true).expired(), "a negative timeout has passed");
    }

    @Test
    void peerAliveAsksTheSupplierEachTime() {
        AtomicBoolean alive = new AtomicBoolean(true);
        Retry retry = Retry.until(HOUR, MS, MS, alive::get);
        assertTrue(retry.peerAlive());
        alive.set(false);
        assertFalse(retry.peerAlive());
    }

    @Test
    void thePauseDoublesUpToTheMaximum() throws InterruptedException {
        Retry retry = Retry.until(HOUR, MS, Duration.ofMillis(4), () -> true);
        assertEquals(MS, retry.nextPause());
        retry.pause("testing");
        assertEquals(Duration.ofMillis(2), retry.nextPause());
        retry.pause("testing");
        assertEquals(Duration.ofMillis(4), retry.nextPause());
        retry.pause("testing");
        assertEquals(Duration.ofMillis(4), retry.nextPause(), "capped");
    }

    @Test
    void aFixedPauseStaysFixed() throws InterruptedException {
        Retry retry = Retry.until(HOUR, Duration.ofMillis(3), Duration.ofMillis(3), () -> true);
        retry.pause("testing");
        retry.pause("testing");
        assertEquals(Duration.ofMillis(3), retry.nextPause());
    }

    @Test
    void thePauseNeverSleepsPastTheDeadline() {
        Retry retry = Retry.until(Duration.ZERO, HOUR, HOUR, () -> true);
        // returns at once instead of sleeping the hour; the preemptive bound only keeps a failure from hanging
        assertTimeoutPreemptively(Duration.ofMinutes(1), () -> retry.pause("testing"));
    }

    @Test
    void anInterruptedPauseSaysWhatItWasDoingAndClearsTheFlag() {
        for (Duration timeout : new Duration[] {HOUR, Duration.ZERO}) {
            Retry retry = Retry.until(timeout, HOUR, HOUR, () -> true);
            Thread.currentThread().interrupt();
            InterruptedException e = assertThrows(InterruptedException.class, () -> retry.pause("connecting to x"));
            assertEquals("interrupted while connecting to x", e.getMessage());
            assertFalse(Thread.currentThread().isInterrupted(), "the flag is cleared, as by Thread.sleep");
        }
    }

    @Test
    void anInterruptDuringThePauseEndsIt() throws Exception {
        Retry retry = Retry.until(HOUR, HOUR, HOUR, () -> true);
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                retry.pause("waiting for y");
                outcome.complete(null);
            } catch (Throwable e) {
                outcome.complete(e);
            }
        });
        t.start();
        t.interrupt();
        Throwable e = outcome.get(1, TimeUnit.MINUTES);
        assertInstanceOf(InterruptedException.class, e);
        assertEquals("interrupted while waiting for y", e.getMessage());
    }

    @Test
    void rejectsPausesThatCannotBackOff() {
        assertThrows(IllegalArgumentException.class, () -> Retry.until(HOUR, Duration.ZERO, MS, () -> true));
        assertThrows(IllegalArgumentException.class, () -> Retry.until(HOUR, Duration.ofMillis(2), MS, () -> true));
        assertThrows(NullPointerException.class, () -> Retry.until(HOUR, MS, MS, null));
        assertThrows(NullPointerException.class, () -> Retry.until(null, MS, MS, () -> true));
    }
}
