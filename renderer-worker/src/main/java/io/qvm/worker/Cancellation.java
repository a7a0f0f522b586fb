package io.qvm.worker;

import io.qvm.protocol.ErrorCode;

/**
 * The watchdog's stop signal for one render, checked by the renderers at safe points (between
 * phases; for PDF before every content-stream operator). Batik's own checks listen to
 * {@link org.apache.batik.util.HaltingThread#halt()} on the render thread, which the watchdog
 * calls at the same time.
 */
public final class Cancellation {

    /** Thrown from deep inside a library callback; turned into TIMEOUT by the renderer. */
    static final class CancelledException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CancelledException() {
            super("cancelled", null, false, false);
        }
    }

    private volatile boolean cancelled;
    private final long timeoutMillis;

    public Cancellation(long timeoutMillis) {
        this.timeoutMillis = timeoutMillis;
    }

    /** A cancellation that never fires (warm-up, tests). */
    public static Cancellation never() {
        return new Cancellation(Long.MAX_VALUE);
    }

    public void cancel() {
        cancelled = true;
    }

    public boolean isCancelled() {
        return cancelled;
    }

    /** Throws the unchecked {@link CancelledException} once cancelled (for library callbacks). */
    void checkUnchecked() {
        if (cancelled) {
            throw new CancelledException();
        }
    }

    /** Throws TIMEOUT once cancelled. */
    public void check() throws RenderException {
        if (cancelled) {
            throw timeout();
        }
    }

    /** The TIMEOUT error this cancellation stands for. */
    public RenderException timeout() {
        return new RenderException(ErrorCode.TIMEOUT, "render did not finish within " + timeoutMillis + " ms");
    }
}
