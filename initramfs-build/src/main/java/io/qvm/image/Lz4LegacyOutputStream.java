package io.qvm.image;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * Compresses to LZ4's <em>legacy</em> format, the one LZ4 container Linux unpacks an initramfs
 * from ({@code lib/decompress_unlz4.c}, {@code CONFIG_RD_LZ4}): the magic {@code 0x184C2102}, then
 * for every 8 MiB of input (the last piece shorter) its compressed size as a little-endian 32-bit
 * number and one LZ4 block. {@link #close()} ends the stream with a chunk size of 0, which the
 * kernel (since 5.12, "correctly handle zero-padding around initrds") reads as the end, and pads
 * it with zeros to a multiple of 4 bytes, so that another archive can follow it in one initrd
 * (a class archive does, {@code ClassArchives.writeInitrd}).
 *
 * <p>Why not gzip: the guest kernel inflates the 114 MB archive in 2.5 s under TCG and unpacks
 * this in 0.9 s (docs/measured.md, 2026-12-07); a cold boot waits for it. Why by hand: see
 * adr/0002, "The initramfs's compression" (commons-compress's LZ4 writer needs minutes, the other
 * Java LZ4 writers rest on {@code sun.misc.Unsafe}).
 *
 * <p>The blocks are made greedily: at each position the longest match among the last
 * {@value #CHAIN_DEPTH} earlier positions with the same 4-byte hash, within LZ4's 64 KiB window.
 * The output depends only on the input bytes, so it is the same on every host. Each block keeps
 * the format's end rules: the last 5 bytes are literals and no match starts in the last 12.
 */
public final class Lz4LegacyOutputStream extends OutputStream {
    /** The legacy format's magic number, little-endian at the start of the stream. */
    public static final int MAGIC = 0x184C2102;
    /** What each block decompresses to (the last one less); the kernel's fixed chunk size. */
    public static final int CHUNK = 8 << 20;

    static final int CHAIN_DEPTH = 16;
    private static final int MIN_MATCH = 4;
    private static final int LAST_LITERALS = 5;
    private static final int MF_LIMIT = 12;
    private static final int MAX_DISTANCE = 65_535;
    private static final int HASH_BITS = 16;
    private static final int WINDOW = 1 << 16;

    private final OutputStream out;
    private final byte[] chunk = new byte[CHUNK];
    private final byte[] block = new byte[maxBlock(CHUNK)];
    private final int[] head = new int[1 << HASH_BITS];
    private final int[] prev = new int[WINDOW];
    private int filled;
    private long written;
    private boolean closed;

    public Lz4LegacyOutputStream(OutputStream out) throws IOException {
        this.out = out;
        writeLe32(MAGIC);
    }

    /** The most a block of {@code n} input bytes can take (the format's worst case, all literals). */
    static int maxBlock(int n) {
        return n + n / 255 + 16;
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        if (closed) {
            throw new IOException("stream closed");
        }
        while (len > 0) {
            int n = Math.min(len, CHUNK - filled);
            System.arraycopy(b, off, chunk, filled, n);
            filled += n;
            off += n;
            len -= n;
            if (filled == CHUNK) {
                flushChunk();
            }
        }
    }

    /** Writes what is buffered as the last block, the end mark and the padding; closes the target. */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try (OutputStream o = out) {
            if (filled > 0) {
                flushChunk();
            }
            writeLe32(0);
            while (written % 4 != 0) {
                o.write(0);
                written++;
            }
        }
    }

    private void flushChunk() throws IOException {
        int n = compressBlock(chunk, filled, block);
        writeLe32(n);
        out.write(block, 0, n);
        written += n;
        filled = 0;
    }

    private void writeLe32(int v) throws IOException {
        out.write(v);
        out.write(v >>> 8);
        out.write(v >>> 16);
        out.write(v >>> 24);
        written += 4;
    }

    /** Compresses {@code src[0, len)} into {@code dst} as one LZ4 block; returns its length. */
    int compressBlock(byte[] src, int len, byte[] dst) {
        Arrays.fill(head, -1);
        int d = 0;
        int anchor = 0;
        int matchLimit = len - LAST_LITERALS;
        int i = 0;
        while (i < len - MF_LIMIT) {
            int bestLen = 0;
            int bestPos = 0;
            int candidate = head[hash(src, i)];
            for (int depth = 0; depth < CHAIN_DEPTH && candidate >= 0 && i - candidate <= MAX_DISTANCE; depth++) {
                int m = 0;
                while (i + m < matchLimit && src[candidate + m] == src[i + m]) {
                    m++;
                }
                if (m > bestLen) {
                    bestLen = m;
                    bestPos = candidate;
                }
                int next = prev[candidate & (WINDOW - 1)];
                if (next >= candidate) {
                    break;
                }
                candidate = next;
            }
            if (bestLen < MIN_MATCH) {
                insert(src, i);
                i++;
                continue;
            }
            d = sequence(src, anchor, i - anchor, i - bestPos, bestLen, dst, d);
            int end = i + bestLen;
            for (int p = i; p < end && p < len - MF_LIMIT; p++) {
                insert(src, p);
            }
            i = end;
            anchor = i;
        }
        return lastLiterals(src, anchor, len - anchor, dst, d);
    }

    private void insert(byte[] src, int p) {
        int h = hash(src, p);
        prev[p & (WINDOW - 1)] = head[h];
        head[h] = p;
    }

    private static int hash(byte[] s, int p) {
        int v = (s[p] & 0xff) | (s[p + 1] & 0xff) << 8 | (s[p + 2] & 0xff) << 16 | (s[p + 3] & 0xff) << 24;
        return (v * -1640531535) >>> (32 - HASH_BITS);
    }

    /** One sequence: {@code literals} bytes from {@code from}, then a match of {@code matchLen} at {@code offset}. */
    private static int sequence(byte[] src, int from, int literals, int offset, int matchLen, byte[] dst, int d) {
        int token = d++;
        int ml = matchLen - MIN_MATCH;
        dst[token] = (byte) (Math.min(literals, 15) << 4 | Math.min(ml, 15));
        d = length(literals, dst, d);
        System.arraycopy(src, from, dst, d, literals);
        d += literals;
        dst[d++] = (byte) offset;
        dst[d++] = (byte) (offset >>> 8);
        return length(ml, dst, d);
    }

    private static int lastLiterals(byte[] src, int from, int literals, byte[] dst, int d) {
        dst[d++] = (byte) (Math.min(literals, 15) << 4);
        d = length(literals, dst, d);
        System.arraycopy(src, from, dst, d, literals);
        return d + literals;
    }

    /** The bytes that extend a 4-bit length field of 15: 255s, then the rest. */
    private static int length(int n, byte[] dst, int d) {
        if (n < 15) {
            return d;
        }
        n -= 15;
        while (n >= 255) {
            dst[d++] = (byte) 255;
            n -= 255;
        }
        dst[d++] = (byte) n;
        return d;
    }
}
