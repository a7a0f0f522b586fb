package io.qvm.protocol.util;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
@Tag("security")
class GrowingBytesTest {

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void aLargeDeclaredLengthCostsOnlyTheFirstChunkUntilBytesArrive() {
        GrowingBytes g = new GrowingBytes(64 << 20);
        assertEquals(GrowingBytes.FIRST_CHUNK, g.capacity());
        byte[] a = g.reserve(10);
        System.arraycopy(new byte[10], 0, a, 0, 10);
        g.advance(10);
        assertEquals(GrowingBytes.FIRST_CHUNK, g.capacity(), "ten bytes: still the first chunk");
        assertEquals((64 << 20) - 10, g.remaining());
        assertThrows(IllegalStateException.class, g::toArray);
    }

    @Test
    void capacityFollowsWhatArrivedAndEndsAtExactlyTheDeclaredLength() {
        int length = 5_000_000;
        byte[] data = random(length, 1);
        GrowingBytes g = new GrowingBytes(length);
        Random chunks = new Random(2);
        while (!g.isComplete()) {
            int n = Math.min(g.remaining(), 1 + chunks.nextInt(70_000));
            byte[] a = g.reserve(n);
            System.arraycopy(data, g.filled(), a, g.filled(), n);
            g.advance(n);
            assertTrue(g.capacity() <= Math.max(GrowingBytes.FIRST_CHUNK, 2L * g.filled()),
                    g.capacity() + " allocated for " + g.filled() + " received");
        }
        byte[] out = g.toArray();
        assertEquals(length, out.length, "no slack at the end");
        assertArrayEquals(data, out);
        assertSame(out, g.toArray(), "handed out without a copy");
    }

    @Test
    void readFromAStreamThatGivesOneToSevenBytesAtATime() throws Exception {
        byte[] data = random(300_000, 3);
        Random r = new Random(4);
        InputStream in = new ByteArrayInputStream(data) {
            @Override
            public synchronized int read(byte[] b, int off, int len) {
                return super.read(b, off, Math.min(len, 1 + r.nextInt(7)));
            }
        };
        GrowingBytes g = new GrowingBytes(data.length);
        while (!g.isComplete()) {
            assertTrue(g.readFrom(in) > 0);
            assertTrue(g.capacity() <= Math.max(GrowingBytes.FIRST_CHUNK, 2L * g.filled()));
        }
        assertArrayEquals(data, g.toArray());
        assertEquals(0, g.readFrom(in));
    }

    @Test
    void theEndOfTheStreamIsMinusOneAndEmptyContentIsCompleteAtOnce() throws Exception {
        GrowingBytes g = new GrowingBytes(100);
        assertEquals(3, g.readFrom(new ByteArrayInputStream(new byte[3])));
        assertEquals(-1, g.readFrom(new ByteArrayInputStream(new byte[0])));
        assertEquals(3, g.filled());
        GrowingBytes empty = new GrowingBytes(0);
        assertTrue(empty.isComplete());
        assertEquals(0, empty.toArray().length);
    }

    @Test
    void misuseIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new GrowingBytes(-1));
        GrowingBytes g = new GrowingBytes(10);
        assertThrows(IllegalArgumentException.class, () -> g.reserve(11));
        assertThrows(IllegalArgumentException.class, () -> g.advance(11));
        assertThrows(IllegalArgumentException.class, () -> g.reserve(-1));
    }
}
