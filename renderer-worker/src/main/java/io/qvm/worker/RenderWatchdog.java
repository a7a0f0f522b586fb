package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.batik.util.HaltingThread;

/**
 * Runs each render on a fresh render thread and stops it when it overruns.
 *
 * <p>The render thread is a Batik {@link HaltingThread} (Batik's builder and painters poll its
 * flag), so its stack is the JVM's default thread stack ({@code -Xss}, 1 MiB on Linux x86_64 and
 * aarch64 unless the guest says otherwise; HaltingThread has no constructor taking a stack size).
 * The structural limits in {@link LimitChecker} keep Batik's recursion far below that, and a
 * {@link StackOverflowError} that still happens ends the request as LIMIT_EXCEEDED, not the JVM:
 * it unwinds straight to this thread's catch (nothing in Batik catches an {@code Error}) and the
 * thread ends. Reaching it is what costs: the recursion must stay cheap per level (see
 * {@code UrlLockdown.DocumentBaseHandler}: resolving a reference used to throw, with a stack trace
 * as deep as the recursion, which made a self-referencing document quadratic and, under emulation,
 * slower than the deadline), and {@link SvgReferences} refuses reference cycles before the build.
 *
 * <p>At the deadline the watchdog cancels ({@link Cancellation}: PDF operators and the phases
 * between steps), halts the thread (Batik) and interrupts it, then gives it {@link #GRACE_MILLIS}
 * to end. The request is answered TIMEOUT either way. If the thread is still running after the
 * grace period the worker is no longer {@link #healthy()}: the loop answers and exits with
 * {@link #STUCK_STATUS}, so the host replaces the sandbox instead of sharing a CPU with a runaway
 * render. An {@link OutOfMemoryError} on the render thread ends the render; {@link MemoryGuard}
 * answers it LIMIT_EXCEEDED if the heap recovered once the thread is gone, else halts the JVM.
 */
final class RenderWatchdog {

    /** Exit status after a render that could not be stopped. */
    static final int STUCK_STATUS = 4;
    static final long GRACE_MILLIS = 500;

    /** A render step that may fail with a typed error. */
    interface Task {
        Rendered run(Cancellation cancel) throws RenderException;
    }

    private final AtomicLong serial = new AtomicLong();
    private volatile boolean healthy = true;

    /** False once a render thread outlived its deadline and its grace period. */
    boolean healthy() {
        return healthy;
    }

    /** The render's own deadline inside the host's: 90 %, at most one second less. */
    static long budgetMillis(long requestTimeoutMillis) {
        return Math.max(1, requestTimeoutMillis - Math.min(1000, requestTimeoutMillis / 10));
    }

    Rendered run(Task task, long timeoutMillis) throws RenderException {
        Cancellation cancel = new Cancellation(timeoutMillis);
        AtomicReference<Object> outcome = new AtomicReference<>();
        HaltingThread thread = new HaltingThread(() -> {
            try {
                outcome.set(task.run(cancel));
            } catch (Throwable t) {
                // An OutOfMemoryError too: the render's objects go with this frame, and
                // MemoryGuard decides below, once the thread has ended, whether the worker goes on.
                outcome.set(t);
            }
        }, "render-" + serial.incrementAndGet());
        thread.setDaemon(true);
        thread.start();
        try {
            thread.join(timeoutMillis);
            if (thread.isAlive()) {
                cancel.cancel();
                thread.halt();
                thread.interrupt();
                thread.join(GRACE_MILLIS);
                if (thread.isAlive()) {
                    healthy = false;
                } else if (outcome.get() instanceof Throwable t && MemoryGuard.outOfMemory(t) != null) {
                    throw MemoryGuard.recover();
                }
                throw cancel.timeout();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            cancel.cancel();
            thread.halt();
            throw new RenderException(ErrorCode.INTERNAL, "worker interrupted");
        }
        Object o = outcome.get();
        if (o instanceof Rendered r) {
            return r;
        }
        if (o instanceof RenderException e) {
            throw e;
        }
        if (o instanceof Throwable t && MemoryGuard.outOfMemory(t) != null) {
            throw MemoryGuard.recover();
        }
        if (o instanceof StackOverflowError) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "document nests too deeply for the render stack");
        }
        if (o instanceof Error e) {
            throw new RenderException(ErrorCode.INTERNAL, "render failed (" + e.getClass().getSimpleName() + ")");
        }
        if (o instanceof Throwable t) {
            throw new RenderException(ErrorCode.INTERNAL, "render failed (" + t.getClass().getSimpleName() + ")");
        }
        throw new RenderException(ErrorCode.INTERNAL, "render ended without a result");
    }
}
