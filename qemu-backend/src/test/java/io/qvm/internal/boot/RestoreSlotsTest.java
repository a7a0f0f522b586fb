package io.qvm.internal.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.awaitility.Awaitility.await;

import io.qvm.BootFailedException;
import io.qvm.SandboxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Restores queue for the backend's slots, each within its own deadline. */
@Tag("unit")
class RestoreSlotsTest {

    @Test
    void noMoreThanTheSlotsRunAtOnceAndEveryStartGetsItsTurn() throws Exception {
        RestoreSlots slots = new RestoreSlots(2);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            List<CompletableFuture<Duration>> starts = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                starts.add(CompletableFuture.supplyAsync(() -> {
                    try (RestoreSlots.Slot slot = slots.acquire(Deadlines.after(Duration.ofSeconds(30)))) {
                        int now = inside.incrementAndGet();
                        most.accumulateAndGet(now, Math::max);
                        sleep(20);
                        inside.decrementAndGet();
                        return slot.waited();
                    }
                }, pool));
            }
            long waitedLonger = 0;
            for (CompletableFuture<Duration> s : starts) {
                if (s.get(30, TimeUnit.SECONDS).toMillis() >= 20) {
                    waitedLonger++;
                }
            }
            assertEquals(2, most.get(), "at most two restores at once, and two did run together");
            assertTrue(waitedLonger >= 7, "16 starts through 2 slots: most waited for a turn (" + waitedLonger + ")");
            assertEquals(0, slots.waiting());
            // every slot came back: two can be taken at once again without waiting
            try (RestoreSlots.Slot a = slots.acquire(Deadlines.after(Duration.ofMillis(1)));
                    RestoreSlots.Slot b = slots.acquire(Deadlines.after(Duration.ofMillis(1)))) {
                assertTrue(a.waited().toMillis() < 1000 && b.waited().toMillis() < 1000);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aStartWhoseDeadlinePassesInTheQueueFailsAsABootFailureNamingTheQueue() {
        RestoreSlots slots = new RestoreSlots(1);
        try (RestoreSlots.Slot held = slots.acquire(Deadlines.after(Duration.ofSeconds(5)))) {
            BootFailedException e = assertThrows(BootFailedException.class,
                    () -> slots.acquire(Deadlines.after(Duration.ofMillis(150))));
            assertTrue(e.getMessage().contains("waiting for one of this backend's 1 restore slots"), e.getMessage());
            assertTrue(e.getMessage().contains("bootTimeout"), e.getMessage());
            assertEquals(0, slots.waiting());
        }
        // the failed wait took nothing: the one slot is free again
        slots.acquire(Deadlines.after(Duration.ofMillis(1))).close();
    }

    @Test
    void aDeadlineAlreadyPassedFailsEvenWithASlotFree() {
        RestoreSlots slots = new RestoreSlots(1);
        assertThrows(BootFailedException.class, () -> slots.acquire(System.nanoTime() - 1));
        slots.acquire(Deadlines.after(Duration.ofSeconds(1))).close();
    }

    @Test
    void anInterruptedWaitFailsAtOnceAndKeepsTheInterrupt() throws Exception {
        RestoreSlots slots = new RestoreSlots(1);
        try (RestoreSlots.Slot held = slots.acquire(Deadlines.after(Duration.ofSeconds(5)))) {
            CountDownLatch waiting = new CountDownLatch(1);
            CompletableFuture<Throwable> outcome = new CompletableFuture<>();
            Thread t = new Thread(() -> {
                waiting.countDown();
                try {
                    slots.acquire(Deadlines.after(Duration.ofSeconds(60))).close();
                    outcome.complete(null);
                } catch (Throwable e) {
                    outcome.complete(Thread.currentThread().isInterrupted() ? e : new AssertionError("interrupt lost", e));
                }
            });
            t.start();
            waiting.await();
            await().atMost(Duration.ofSeconds(10)).until(() -> slots.waiting() == 1);
            t.interrupt();
            Throwable e = outcome.get(10, TimeUnit.SECONDS);
            assertTrue(e instanceof SandboxException && !(e instanceof BootFailedException), String.valueOf(e));
            assertTrue(e.getMessage().contains("interrupted"), e.getMessage());
        }
    }

    @Test
    void aSlotClosedTwiceGivesBackOne() {
        RestoreSlots slots = new RestoreSlots(1);
        RestoreSlots.Slot s = slots.acquire(Deadlines.after(Duration.ofSeconds(1)));
        s.close();
        s.close();
        RestoreSlots.Slot again = slots.acquire(Deadlines.after(Duration.ofSeconds(1)));
        assertThrows(BootFailedException.class, () -> slots.acquire(Deadlines.after(Duration.ofMillis(50))));
        again.close();
    }

    @Test
    void atLeastOneSlot() {
        assertThrows(IllegalArgumentException.class, () -> new RestoreSlots(0));
        assertFalse(RestoreSlots.forHost().slots() < 1);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
