package io.qvm.internal.boot;

import io.qvm.BootFailedException;
import java.time.Duration;

/** The one boot deadline every step of a start shares, as {@link System#nanoTime()} values. */
public final class Deadlines {

    private Deadlines() {
    }

    /** The deadline {@code timeout} from now. */
    public static long after(Duration timeout) {
        return System.nanoTime() + timeout.toNanos();
    }

    /** What is left of the deadline; past it, the boot has failed. */
    public static Duration remaining(long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw new BootFailedException("the boot deadline passed");
        }
        return Duration.ofNanos(left);
    }

    /** What is left of the deadline, at most {@code cap}. */
    public static Duration remaining(long deadlineNanos, Duration cap) {
        Duration left = remaining(deadlineNanos);
        return left.compareTo(cap) <= 0 ? left : cap;
    }

    public static boolean passed(long deadlineNanos) {
        return System.nanoTime() >= deadlineNanos;
    }

    static Duration since(long startNanos) {
        return Duration.ofNanos(System.nanoTime() - startNanos);
    }
}
