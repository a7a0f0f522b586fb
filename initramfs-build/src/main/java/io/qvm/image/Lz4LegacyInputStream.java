package io.qvm.image;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import org.apache.commons.compress.compressors.lz4.BlockLZ4CompressorInputStream;

/**
 * Reads what {@link Lz4LegacyOutputStream} writes, the way the guest kernel does: after the magic,
 * chunks of a little-endian 32-bit compressed size and one LZ4 block (decoded by Commons
 * Compress), each of at most {@value Lz4LegacyOutputStream#CHUNK} bytes decompressed; a repeated
 * magic is skipped; a chunk size of 0, or the end of the input where a chunk size would begin,
 * ends the stream. A block that claims more than an 8 MiB chunk can take, decodes to more than 8
 * MiB, or is cut short is an {@link IOException} naming what was wrong: memory stays bounded by
 * two chunks whatever the input says.
 */
public final class Lz4LegacyInputStream extends InputStream {
    private final InputStream in;
    private byte[] chunk = new byte[0];
    private int pos;
    private boolean ended;
    private long chunks;

    /** Reads the magic; an {@link IOException} if {@code in} does not start with it. */
    public Lz4LegacyInputStream(InputStream in) throws IOException {
        this.in = in;
        byte[] magic = in.readNBytes(4);
        if (magic.length < 4 || le32(magic) != Lz4LegacyOutputStream.MAGIC) {
            throw new IOException("not an LZ4 legacy stream (no magic 0x184C2102 at its start)");
        }
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        while (pos == chunk.length) {
            if (ended || !nextChunk()) {
                ended = true;
                return -1;
            }
        }
        int n = Math.min(len, chunk.length - pos);
        System.arraycopy(chunk, pos, b, off, n);
        pos += n;
        return n;
    }

    private boolean nextChunk() throws IOException {
        int size;
        do {
            byte[] head = in.readNBytes(4);
            if (head.length == 0) {
                return false;
            }
            if (head.length < 4) {
                throw new EOFException("LZ4 legacy stream cut short inside the size of chunk " + chunks);
            }
            size = le32(head);
        } while (size == Lz4LegacyOutputStream.MAGIC);
        if (size == 0) {
            return false;
        }
        int max = Lz4LegacyOutputStream.maxBlock(Lz4LegacyOutputStream.CHUNK);
        if (size < 0 || size > max) {
            throw new IOException("LZ4 legacy chunk " + chunks + " claims " + Integer.toUnsignedString(size)
                    + " compressed bytes, more than an 8 MiB chunk can take (" + max + ")");
        }
        byte[] block = in.readNBytes(size);
        if (block.length < size) {
            throw new EOFException("LZ4 legacy chunk " + chunks + " cut short: " + block.length + " of " + size
                    + " bytes");
        }
        byte[] out;
        try (InputStream lz = new BlockLZ4CompressorInputStream(new ByteArrayInputStream(block))) {
            out = lz.readNBytes(Lz4LegacyOutputStream.CHUNK + 1);
        } catch (IOException | RuntimeException e) {
            throw new IOException("LZ4 legacy chunk " + chunks + " does not decode: " + e.getMessage(), e);
        }
        if (out.length > Lz4LegacyOutputStream.CHUNK) {
            throw new IOException("LZ4 legacy chunk " + chunks + " decodes to more than 8 MiB");
        }
        chunks++;
        chunk = out;
        pos = 0;
        return true;
    }

    private static int le32(byte[] b) {
        return (b[0] & 0xff) | (b[1] & 0xff) << 8 | (b[2] & 0xff) << 16 | (b[3] & 0xff) << 24;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
