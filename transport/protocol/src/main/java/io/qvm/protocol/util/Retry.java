package io.qvm.protocol.util;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The state of one "try again until the deadline, but stop the moment the peer died" wait: the
 * deadline, the pause between attempts (doubling up to a maximum, never past the deadline) and
 * the peer's liveness. The loop stays the caller's, so each caller keeps its own attempt and its
 * own errors:
 *
 * <pre>{@code
 * Retry retry = Retry.until(timeout, Duration.ofMillis(5), Duration.ofMillis(100), qemu::isAlive);
 * while (true) {
 *     try {
 *         return connect(socket);
 *     } catch (IOException e) {
 *         last = e;
 *     }
 *     if (!retry.peerAlive()) {
 *         throw new IOException("QEMU exited before " + socket + " accepted a connection");
 *     }
 *     if (retry.expired()) {
 *         throw new IOException(socket + " did not accept a connection within " + timeout);
 *     }
 *     retry.pause("connecting to " + socket);
 * }
 * }</pre>
 *
 * Not thread-safe: one loop owns it.
 */
public final class Retry {

    private final long endNanos;
    private final long maxPauseNanos;
    private final BooleanSupplier peerAlive;
    private long pauseNanos;

    private Retry(long endNanos, long firstPauseNanos, long maxPauseNanos, BooleanSupplier peerAlive) {
        this.endNanos = endNanos;
        this.pauseNanos = firstPauseNanos;
        this.maxPauseNanos = maxPauseNanos;
        this.peerAlive = peerAlive;
    }

    /**
     * A wait that ends {@code timeout} from now, first pausing {@code firstPause}, then twice as
     * long each time up to {@code maxPause} (equal for a fixed pause).
     *
     * @param peerAlive false once the other side is gone (no use waiting for it); {@code () -> true}
     *                  when there is nobody to watch
     */
    public static Retry until(Duration timeout, Duration firstPause, Duration maxPause, BooleanSupplier peerAlive) {
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(peerAlive, "peerAlive");
        long first = firstPause.toNanos();
        long max = maxPause.toNanos();
        if (first <= 0 || max < first) {
            throw new IllegalArgumentException("want 0 < firstPause <= maxPause, got " + firstPause + " and " + maxPause);
        }
        return new Retry(System.nanoTime() + timeout.toNanos(), first, max, peerAlive);
    }

    /** Whether the peer still lives. */
    public boolean peerAlive() {
        return peerAlive.getAsBoolean();
    }

    /** Whether the deadline has come. */
    public boolean expired() {
        return System.nanoTime() - endNanos >= 0;
    }

    /** Nanoseconds until the deadline, 0 once it passed. */
    public long remainingNanos() {
        return Math.max(0, endNanos - System.nanoTime());
    }

    /**
     * Sleeps the current pause, cut short at the deadline, and doubles the next one up to the
     * maximum.
     *
     * @param doing what the loop does, for the message when interrupted ("connecting to …")
     * @throws InterruptedException interrupted before or during the pause (the flag is cleared)
     */
    public void pause(String doing) throws InterruptedException {
        long nanos = Math.min(pauseNanos, remainingNanos());
        pauseNanos = Math.min(pauseNanos * 2, maxPauseNanos);
        try {
            if (nanos > 0) {
                TimeUnit.NANOSECONDS.sleep(nanos);
            } else if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        } catch (InterruptedException e) {
            throw new InterruptedException("interrupted while " + doing);
        }
    }

    /** The longest the next {@link #pause} sleeps (it stops at the deadline): what the backoff has reached. */
    Duration nextPause() {
        return Duration.ofNanos(pauseNanos);
    }
}
