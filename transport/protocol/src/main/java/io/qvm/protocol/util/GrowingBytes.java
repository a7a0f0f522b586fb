package io.qvm.protocol.util;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/**
 * The bytes of something whose length a peer declared (a frame's header or body), collected as
 * they arrive into an array that grows with them instead of being allocated at the declared
 * length: a peer that declares 64 MiB and sends ten bytes costs {@value #FIRST_CHUNK} bytes, not
 * 64 MiB.
 *
 * <pre>
 *  declared length L (already checked against the reader's limits)
 *  capacity:  min(L, 64 KiB) → doubles when full, never above L → exactly L once complete
 *  bound:     capacity ≤ max(64 KiB, 2 × bytes received), so memory follows what arrived
 * </pre>
 *
 * Growing by doubling copies every byte at most once more on average; the last step lands on
 * exactly {@code L}, so the complete content is handed out without a further copy
 * ({@link #toArray()}). Not thread-safe: one reader.
 */
public final class GrowingBytes {

    /** What is allocated before anything arrived (or the declared length, when smaller). */
    public static final int FIRST_CHUNK = 64 * 1024;

    private final int length;
    private byte[] array;
    private int filled;

    /** @param length the declared length, already bounded by the caller's limits */
    public GrowingBytes(int length) {
        if (length < 0) {
            throw new IllegalArgumentException("length must not be negative, was " + length);
        }
        this.length = length;
        this.array = new byte[Math.min(length, FIRST_CHUNK)];
    }

    /** The declared length. */
    public int length() {
        return length;
    }

    /** Bytes received so far. */
    public int filled() {
        return filled;
    }

    /** Bytes still to come. */
    public int remaining() {
        return length - filled;
    }

    /** Bytes allocated now (what this costs in memory). */
    public int capacity() {
        return array.length;
    }

    /** Whether all {@link #length()} bytes arrived. */
    public boolean isComplete() {
        return filled == length;
    }

    /**
     * Makes room for the next {@code n} bytes and returns the array to write them into, at
     * index {@link #filled()}; call {@link #advance(int)} once they are written.
     *
     * @param n bytes that have arrived and are to be written, at most {@link #remaining()}
     */
    public byte[] reserve(int n) {
        if (n < 0 || n > remaining()) {
            throw new IllegalArgumentException("reserve " + n + " bytes with " + remaining() + " remaining");
        }
        int need = filled + n;
        if (need > array.length) {
            array = Arrays.copyOf(array, (int) Math.min(length, Math.max(need, 2L * array.length)));
        }
        return array;
    }

    /** Records that {@code n} bytes were written at {@link #filled()} into the reserved room. */
    public void advance(int n) {
        if (n < 0 || filled + n > array.length) {
            throw new IllegalArgumentException("advance " + n + " bytes with room for " + (array.length - filled));
        }
        filled += n;
    }

    /**
     * Reads what {@code in} gives in one call, into the room there is (growing first when the
     * array is full: to twice what arrived, at most the declared length).
     *
     * @return the bytes read, or -1 at the end of the stream; 0 only when already complete
     */
    public int readFrom(InputStream in) throws IOException {
        if (isComplete()) {
            return 0;
        }
        if (filled == array.length) {
            reserve(Math.min(remaining(), array.length));
        }
        int n = in.read(array, filled, array.length - filled);
        if (n > 0) {
            filled += n;
        }
        return n;
    }

    /**
     * The content, once complete: the array itself, exactly {@link #length()} bytes long.
     *
     * @throws IllegalStateException before it is complete
     */
    public byte[] toArray() {
        if (!isComplete()) {
            throw new IllegalStateException(filled + " of " + length + " bytes arrived");
        }
        return array;
    }
}
