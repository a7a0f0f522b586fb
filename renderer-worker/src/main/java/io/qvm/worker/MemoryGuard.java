package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The last line behind the cost estimates ({@link SvgCost}): an {@link OutOfMemoryError} that a
 * render still runs into. The render thread catches it and ends, so everything the render
 * allocated (rasters, stroked shapes, the GVT tree) becomes garbage; the watchdog then asks
 * {@link #recover()}: after a full collection the used heap must be back under
 * {@link #SAFE_USED_FRACTION} of the maximum. If it is, the request is answered LIMIT_EXCEEDED
 * and the worker goes on; if not (something outside the render holds the memory, or the heap is
 * in a state nobody can vouch for), the worker halts as before ({@link FatalErrors}).
 *
 * <p>{@link #caught()} counts the out-of-memory errors a render recovered from in this JVM; each
 * one is also logged ({@code worker: out of memory in a render, recovered (N so far)}), so a test
 * that sees only the worker's stderr can count them too. An OOM outside a render (the protocol
 * loop, another thread) still halts with status {@value FatalErrors#OUT_OF_MEMORY_STATUS}.
 */
final class MemoryGuard {

    /** Most of the heap that may still be in use after the collection for the worker to go on. */
    static final double SAFE_USED_FRACTION = 0.5;

    /** The log line's start, pre-encoded: little may be allocated right after an OOM. */
    static final String RECOVERED_LINE = "worker: out of memory in a render, recovered";

    private static final byte[] RECOVERED = (RECOVERED_LINE + " (").getBytes(StandardCharsets.US_ASCII);
    private static final AtomicLong CAUGHT = new AtomicLong();

    private MemoryGuard() {
    }

    /** Out-of-memory errors renders recovered from in this JVM. */
    static long caught() {
        return CAUGHT.get();
    }

    /** The {@link OutOfMemoryError} in {@code t}'s cause chain, or null ({@link FatalErrors#findOutOfMemory}). */
    static OutOfMemoryError outOfMemory(Throwable t) {
        return FatalErrors.findOutOfMemory(t);
    }

    /** Rethrows the {@link OutOfMemoryError} a library wrapped into {@code e}, if there is one. */
    static void rethrowIfOutOfMemory(Throwable e) {
        OutOfMemoryError oom = outOfMemory(e);
        if (oom != null) {
            throw oom;
        }
    }

    /**
     * Called once the render thread that ran out of memory has ended: LIMIT_EXCEEDED if the heap
     * recovered, else halts the JVM.
     */
    static RenderException recover() {
        System.gc();
        Runtime rt = Runtime.getRuntime();
        long used = rt.totalMemory() - rt.freeMemory();
        if (used > rt.maxMemory() * SAFE_USED_FRACTION) {
            FatalErrors.outOfMemory();
        }
        long n = CAUGHT.incrementAndGet();
        try {
            FileOutputStream err = new FileOutputStream(FileDescriptor.err);
            err.write(RECOVERED);
            err.write((n + " so far)\n").getBytes(StandardCharsets.US_ASCII));
        } catch (Throwable ignored) {
            // The answer matters more than the log line.
        }
        return new RenderException(ErrorCode.LIMIT_EXCEEDED, "the document needs more memory than the worker has");
    }
}
