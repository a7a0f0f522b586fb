package io.qvm.worker;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * What the worker does when the JVM itself is in trouble. An {@link OutOfMemoryError} leaves the
 * heap in an unknown state (a library may have half-built a structure), so the worker does not
 * try to answer: it prints one line and halts with {@link #OUT_OF_MEMORY_STATUS}. The guest then
 * powers off and the host answers the request with a typed error from the exit status.
 */
public final class FatalErrors {

    /** Exit status after an {@link OutOfMemoryError}. */
    public static final int OUT_OF_MEMORY_STATUS = 3;

    /** Pre-encoded so that printing it needs no allocation worth mentioning. */
    private static final byte[] OOM_LINE = "worker: fatal out of memory\n".getBytes(StandardCharsets.US_ASCII);

    private FatalErrors() {
    }

    /** Prints {@code worker: fatal out of memory} on stderr and halts the JVM with status 3. */
    public static void outOfMemory() {
        try {
            new FileOutputStream(FileDescriptor.err).write(OOM_LINE);
        } catch (Throwable ignored) {
            // Nothing left to tell: halt anyway.
        }
        Runtime.getRuntime().halt(OUT_OF_MEMORY_STATUS);
    }

    /** Halts on an {@link OutOfMemoryError} anywhere in {@code t}'s cause chain; returns otherwise. */
    public static void haltIfOutOfMemory(Throwable t) {
        if (findOutOfMemory(t) != null) {
            outOfMemory();
        }
    }

    /** The {@link OutOfMemoryError} in {@code t}'s cause chain, or null. */
    static OutOfMemoryError findOutOfMemory(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof OutOfMemoryError oom) {
                return oom;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return null;
    }
}
