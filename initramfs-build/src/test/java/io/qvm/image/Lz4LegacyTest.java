package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The initramfs's LZ4 legacy stream: what the writer makes decodes, through Commons Compress's
 * block reader, to the bytes it was given; every block keeps the format's end rules, which the
 * kernel's decoder relies on; and the reader refuses malformed streams, saying what was wrong. The kernel
 * itself unpacks a real image in {@code ImageBootE2ETest}, and one with a class archive appended
 * in {@code SandboxLifecycleE2ETest}.
 */
@Tag("unit")
class Lz4LegacyTest {
    private static final int CHUNK = Lz4LegacyOutputStream.CHUNK;

    @Test
    void everyKindOfInputComesBackTheSame() throws IOException {
        Random random = new Random(42);
        byte[] noise = new byte[3 << 20];
        random.nextBytes(noise);
        byte[] text = "<svg xmlns='http://www.w3.org/2000/svg'><rect width='10' height='10'/></svg>\n".repeat(40_000)
                .getBytes(StandardCharsets.US_ASCII);
        byte[] mixed = new byte[2 * CHUNK + 12_345];
        for (int i = 0; i < mixed.length; i += 4096) {
            if ((i / 4096) % 3 == 0) {
                byte[] r = new byte[Math.min(4096, mixed.length - i)];
                random.nextBytes(r);
                System.arraycopy(r, 0, mixed, i, r.length);
            } else {
                System.arraycopy(text, i % 100_000, mixed, i, Math.min(4096, mixed.length - i));
            }
        }
        List<byte[]> inputs = new ArrayList<>(List.of(new byte[0], new byte[] {7}, new byte[12], new byte[13],
                "abcdabcdabcdabcdabcd".getBytes(StandardCharsets.US_ASCII), noise, text, new byte[CHUNK - 1],
                new byte[CHUNK], new byte[CHUNK + 1], mixed));
        for (byte[] in : inputs) {
            byte[] packed = pack(in);
            assertArrayEquals(in, unpack(packed), "round trip of " + in.length + " bytes");
            assertEquals(0, packed.length % 4, "a whole number of words");
            assertArrayEquals(packed, pack(in), "the same bytes every time");
            assertChunks(packed, in.length);
        }
        assertTrue(pack(text).length < text.length / 20, "repetitive text shrinks: " + pack(text).length);
    }

    @Test
    void writesInAnyPiecesAsInOneWrite() throws IOException {
        byte[] in = new byte[CHUNK + 100_000];
        byte[] line = "a cpio header 070701 and then some 070701 more\n".getBytes(StandardCharsets.US_ASCII);
        Random random = new Random(7);
        for (int i = 0; i < in.length; i++) {
            in[i] = (i / 65_536) % 2 == 0 ? line[i % line.length] : (byte) random.nextInt(4);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Lz4LegacyOutputStream lz = new Lz4LegacyOutputStream(out)) {
            int p = 0;
            for (; p < 1000; p++) {
                lz.write(in[p]);
            }
            for (; p < in.length; p += 7_919) {
                lz.write(in, p, Math.min(7_919, in.length - p)); // pieces that straddle the 8 MiB edge
            }
        }
        assertArrayEquals(pack(in), out.toByteArray());
        assertArrayEquals(in, unpack(out.toByteArray()));
    }

    /**
     * The writer's bytes are part of the image's recipe only through {@link InitramfsArchive#FORMAT}:
     * a change that alters them must change that text too, or {@code ImageBuilder.upToDate} would
     * keep images a fresh build no longer makes. When this fails, change FORMAT and both pins.
     */
    @Test
    void theOutputIsPinnedTogetherWithTheFormatThatNamesIt() throws IOException {
        byte[] sample = new byte[300_000];
        Random random = new Random(2026_12_07L);
        byte[] text = "<path d='M 10 10 L 20 20'/>\n<text x='5'>qvm</text>\n".getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < sample.length; i++) {
            sample[i] = (i / 10_000) % 3 == 2 ? (byte) random.nextInt() : text[(i * 7 / 5) % text.length];
        }
        assertEquals("cpio newc; LZ4 legacy, 8 MiB chunks, greedy, chain depth 16, ended by a zero chunk size and"
                + " padded to 4 bytes", InitramfsArchive.FORMAT);
        assertEquals(PINNED_SHA256, io.qvm.protocol.util.Sha256.of(pack(sample)));
    }

    private static final String PINNED_SHA256 = "f97e484c997135f0e8d14746d1dee4711733246e9f5bbdd26ffbda4b0313cf0a";

    @Test
    void theReaderStopsAtTheEndMarkAndSkipsARepeatedMagic() throws IOException {
        byte[] a = pack("first ".repeat(100).getBytes(StandardCharsets.US_ASCII));
        byte[] b = pack("second".repeat(100).getBytes(StandardCharsets.US_ASCII));
        // A second stream right after the first one's chunks (without the first's end mark): the
        // kernel reads the repeated magic as "go on".
        byte[] joined = concat(Arrays.copyOf(a, endOfChunks(a)), b);
        assertEquals("first ".repeat(100) + "second".repeat(100), new String(unpack(joined), StandardCharsets.US_ASCII));
        // What follows the end mark (here, another archive) is not read.
        byte[] followed = concat(a, "070701 a cpio archive".getBytes(StandardCharsets.US_ASCII));
        assertEquals("first ".repeat(100), new String(unpack(followed), StandardCharsets.US_ASCII));
        // No end mark at all: the end of the input ends it, as it does for the kernel.
        assertEquals("first ".repeat(100), new String(unpack(Arrays.copyOf(a, endOfChunks(a))),
                StandardCharsets.US_ASCII));
    }

    @Test
    void badStreamsAreRefusedWithWhatWasWrong() throws IOException {
        IOException notLz4 = assertThrows(IOException.class, () -> unpack("070701".getBytes(StandardCharsets.US_ASCII)));
        assertTrue(notLz4.getMessage().contains("no magic"), notLz4.getMessage());

        byte[] tooBig = concat(le32(Lz4LegacyOutputStream.MAGIC), le32(Integer.MAX_VALUE));
        IOException big = assertThrows(IOException.class, () -> unpack(tooBig));
        assertTrue(big.getMessage().contains("more than an 8 MiB chunk can take"), big.getMessage());
        byte[] negative = concat(le32(Lz4LegacyOutputStream.MAGIC), le32(-5));
        assertThrows(IOException.class, () -> unpack(negative));

        byte[] whole = pack("cut me short ".repeat(1000).getBytes(StandardCharsets.US_ASCII));
        EOFException cut = assertThrows(EOFException.class, () -> unpack(Arrays.copyOf(whole, 30)));
        assertTrue(cut.getMessage().contains("cut short"), cut.getMessage());
        assertThrows(EOFException.class, () -> unpack(Arrays.copyOf(whole, 6)));

        // One literal and a match of offset 1 that repeats it CHUNK times: a block of 33 KB that
        // would decode to more than a chunk.
        ByteArrayOutputStream bomb = new ByteArrayOutputStream();
        bomb.write(0x1f);
        bomb.write('x');
        bomb.write(1);
        bomb.write(0);
        int rest = CHUNK - 15;
        while (rest >= 255) {
            bomb.write(255);
            rest -= 255;
        }
        bomb.write(rest);
        bomb.write(0x50);
        bomb.writeBytes("12345".getBytes(StandardCharsets.US_ASCII));
        byte[] block = bomb.toByteArray();
        byte[] stream = concat(concat(le32(Lz4LegacyOutputStream.MAGIC), le32(block.length)), block);
        IOException boom = assertThrows(IOException.class, () -> unpack(stream));
        assertTrue(boom.getMessage().contains("more than 8 MiB"), boom.getMessage());

        byte[] garbage = concat(concat(le32(Lz4LegacyOutputStream.MAGIC), le32(4)), new byte[] {(byte) 0xf0, 1, 2, 3});
        IOException bad = assertThrows(IOException.class, () -> unpack(garbage));
        assertTrue(bad.getMessage().contains("does not decode"), bad.getMessage());
    }

    /**
     * Walks every block's sequences: the decoded length adds up to the chunk's, every chunk but
     * the last is exactly 8 MiB, no match reaches before the chunk's start, the last sequence is
     * literals only and at least 5 of them (when the chunk has 5 bytes), and no match starts in
     * the last 12 bytes.
     */
    private static void assertChunks(byte[] packed, int inputLength) {
        int p = 4;
        long decoded = 0;
        List<Integer> sizes = new ArrayList<>();
        while (true) {
            int size = le32(packed, p);
            p += 4;
            if (size == 0) {
                break;
            }
            int n = walk(packed, p, size);
            sizes.add(n);
            decoded += n;
            p += size;
        }
        for (int i = p; i < packed.length; i++) {
            assertEquals(0, packed[i], "only padding after the end mark");
        }
        assertTrue(packed.length - p < 4, "at most 3 bytes of padding");
        assertEquals(inputLength, decoded);
        for (int i = 0; i < sizes.size() - 1; i++) {
            assertEquals(CHUNK, sizes.get(i), "chunk " + i);
        }
    }

    private static int walk(byte[] b, int start, int size) {
        int p = start;
        int end = start + size;
        int out = 0;
        int lastMatchStart = -1;
        int lastLiterals = 0;
        while (true) {
            int token = b[p++] & 0xff;
            int literals = token >>> 4;
            if (literals == 15) {
                int x;
                do {
                    x = b[p++] & 0xff;
                    literals += x;
                } while (x == 255);
            }
            p += literals;
            out += literals;
            if (p == end) {
                lastLiterals = literals;
                break;
            }
            int offset = (b[p] & 0xff) | (b[p + 1] & 0xff) << 8;
            p += 2;
            assertTrue(offset >= 1 && offset <= out, "offset " + offset + " within the " + out + " bytes so far");
            int match = (token & 15) + 4;
            if ((token & 15) == 15) {
                int x;
                do {
                    x = b[p++] & 0xff;
                    match += x;
                } while (x == 255);
            }
            lastMatchStart = out;
            out += match;
            assertTrue(p < end, "a block does not end with a match");
        }
        if (out >= 5) {
            assertTrue(lastLiterals >= 5, "the last 5 bytes are literals (" + lastLiterals + ")");
        }
        if (lastMatchStart >= 0) {
            assertTrue(lastMatchStart <= out - 12, "the last match starts 12 bytes before the end");
        }
        return out;
    }

    /** Where the end mark (a chunk size of 0) of a packed stream starts; CpioWriterTest uses it too. */
    static int endOfChunks(byte[] packed) {
        int p = 4;
        while (le32(packed, p) != 0) {
            p += 4 + le32(packed, p);
        }
        return p;
    }

    private static byte[] pack(byte[] in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (Lz4LegacyOutputStream lz = new Lz4LegacyOutputStream(out)) {
            lz.write(in);
        }
        return out.toByteArray();
    }

    private static byte[] unpack(byte[] packed) throws IOException {
        try (InputStream in = new Lz4LegacyInputStream(new ByteArrayInputStream(packed))) {
            return in.readAllBytes();
        }
    }

    private static int le32(byte[] b, int p) {
        return (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16 | (b[p + 3] & 0xff) << 24;
    }

    private static byte[] le32(int v) {
        return new byte[] {(byte) v, (byte) (v >>> 8), (byte) (v >>> 16), (byte) (v >>> 24)};
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
