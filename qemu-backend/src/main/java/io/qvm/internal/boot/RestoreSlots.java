package io.qvm.internal.boot;

import io.qvm.BootFailedException;
import io.qvm.SandboxException;
import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many clones a backend restores at once: one per host core. A restore is the guest's
 * busiest second — its device state loaded, its clock set and its CRNG reseeded by the init, the
 * worker's HELLO and STATUS answered — and each clone's vCPU wants a core for it. Sixteen at once
 * on two cores made every one of them slow, and the init's {@code restore} answer then missed
 * its 20 s for ten of the sixteen (bench run of 2026-12-03), each such clone cold-booting in its
 * place: the heaviest start there is, added to the load that made the restore fail.
 *
 * <p>So restores queue, first come first served, each within its own boot deadline: a start
 * whose deadline passes while it waits fails with {@link BootFailedException} saying so (a cold
 * boot in its place could not finish in no time either), and one interrupted while it waits
 * (a pool closing) fails at once. The slot is held from QEMU's launch until the clone is proven
 * or failed, and given back either way.
 */
public final class RestoreSlots {

    private final int slots;
    private final Semaphore free;
    private final AtomicInteger waiting = new AtomicInteger();

    /** @param slots restores at once, at least 1 (the host's cores: {@link #forHost()}) */
    public RestoreSlots(int slots) {
        if (slots < 1) {
            throw new IllegalArgumentException("restore slots must be at least 1, got " + slots);
        }
        this.slots = slots;
        this.free = new Semaphore(slots, true);
    }

    /** One slot per core this JVM may use. */
    public static RestoreSlots forHost() {
        return new RestoreSlots(Runtime.getRuntime().availableProcessors());
    }

    public int slots() {
        return slots;
    }

    /** Starts that wait for a slot now. */
    public int waiting() {
        return waiting.get();
    }

    /**
     * A slot, waited for until {@code deadline}; close it to give it back.
     *
     * @throws BootFailedException the deadline passed while the start waited
     * @throws SandboxException the thread was interrupted while it waited (the interrupt is kept)
     */
    public Slot acquire(long deadline) {
        long queued = System.nanoTime();
        waiting.incrementAndGet();
        boolean got;
        try {
            long left = deadline - System.nanoTime();
            got = left > 0 && free.tryAcquire(left, TimeUnit.NANOSECONDS); // timed: it keeps the queue's order
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException("interrupted while waiting for one of this backend's " + slots
                    + " restore slots", e);
        } finally {
            waiting.decrementAndGet();
        }
        Duration waited = Duration.ofNanos(System.nanoTime() - queued);
        if (!got) {
            throw new BootFailedException("sandbox not started: its boot deadline passed after " + waited.toMillis()
                    + " ms waiting for one of this backend's " + slots + " restore slots (one per host core; other"
                    + " clones were being restored). Start fewer sandboxes at once (a pool's maxSize), or raise "
                    + "SandboxConfig.bootTimeout");
        }
        return new Slot(waited);
    }

    /** A slot held; {@link #close()} gives it back, once. */
    public final class Slot implements AutoCloseable {
        private final Duration waited;
        private boolean closed;

        private Slot(Duration waited) {
            this.waited = waited;
        }

        /** How long the start waited for this slot. */
        public Duration waited() {
            return waited;
        }

        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                free.release();
            }
        }
    }
}
