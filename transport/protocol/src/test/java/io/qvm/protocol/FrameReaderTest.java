package io.qvm.protocol;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameWriter;
import static io.qvm.protocol.RawFrames.concat;
import static io.qvm.protocol.RawFrames.encode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@Tag("unit")
class FrameReaderTest {

    private static final FrameLimits LIMITS = FrameLimits.ofBody(32 << 20);

    private static FrameReader reader(byte[] bytes) {
        return new FrameReader(new ByteArrayInputStream(bytes), LIMITS);
    }

    private static Frame echo(long id, int bodyBytes) {
        byte[] body = new byte[bodyBytes];
        new Random(id).nextBytes(body);
        return Frame.of(FrameKind.ECHO, id, body);
    }

    private static void assertSameFrame(Frame expected, Frame actual) {
        assertEquals(expected.kind(), actual.kind());
        assertEquals(expected.requestId(), actual.requestId());
        assertEquals(expected.header(), actual.header());
        assertArrayEquals(expected.body(), actual.body());
    }

    @ParameterizedTest
    @EnumSource(FrameKind.class)
    void everyKindRoundTripsThroughWriterAndReader(FrameKind kind) throws Exception {
        ObjectNode h = JsonNodeFactory.instance.objectNode().put("kind", kind.name()).put("n", 12);
        Frame f = new Frame(kind, 42, h, new byte[] {1, 2, 3});
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new FrameWriter(out, LIMITS).write(f);
        FrameReader r = reader(out.toByteArray());
        assertSameFrame(f, r.read());
        assertNull(r.read(), "end of stream between frames");
        assertEquals(0, r.discardedBytes());
    }

    @Test
    void emptyHeaderAndEmptyBody() throws Exception {
        Frame f = Frame.of(FrameKind.GOODBYE, -1, (byte[]) null);
        assertSameFrame(f, reader(encode(f)).read());
    }

    @Test
    void largeBody() throws Exception {
        Frame f = echo(7, 16 << 20);
        assertSameFrame(f, reader(encode(f)).read());
    }

    @Test
    void badMagicIsStaleBytesAndTheNextFrameReads() throws Exception {
        byte[] broken = encode(echo(1, 10));
        broken[1] = 'X';
        Frame good = echo(2, 10);
        FrameReader r = reader(concat(broken, encode(good)));
        assertSameFrame(good, r.read());
        assertEquals(broken.length, r.discardedBytes());
    }

    @Test
    void badChecksumIsStaleBytesAndTheNextFrameReads() throws Exception {
        byte[] broken = encode(echo(1, 10));
        broken[12] ^= 0x40; // inside the request id: the CRC no longer matches
        Frame good = echo(2, 10);
        FrameReader r = reader(concat(broken, encode(good)));
        assertSameFrame(good, r.read());
        assertEquals(broken.length, r.discardedBytes());
    }

    @Test
    void staleBytesWithQsAndAFakeMagicBeforeAFrame() throws Exception {
        byte[] fakePrefix = encode(echo(9, 0));
        fakePrefix[27] ^= 1; // magic right, CRC wrong
        byte[] stale = concat("QQ QV QVM QVMF Q".getBytes(), fakePrefix, "trailing Q".getBytes());
        Frame good = echo(3, 100);
        FrameReader r = reader(concat(stale, encode(good)));
        assertSameFrame(good, r.read());
        assertEquals(stale.length, r.discardedBytes());
    }

    @Test
    void wrongVersionReservedFlagsAndUnknownKindAreSkippedWithTheirId() throws Exception {
        byte[] v2 = RawFrames.frame(2, 0x10, 0, 11, "{}", new byte[7]);
        byte[] flags = RawFrames.frame(1, 0x10, 1, 12, "{}", new byte[7]);
        byte[] kind = RawFrames.frame(1, 0x33, 0, 13, "{}", new byte[7]);
        Frame good = echo(14, 5);
        FrameReader r = reader(concat(v2, flags, kind, encode(good)));
        assertEquals(11, assertThrows(FrameCorruptException.class, r::read).requestId());
        assertEquals(12, assertThrows(FrameCorruptException.class, r::read).requestId());
        assertEquals(13, assertThrows(FrameCorruptException.class, r::read).requestId());
        assertSameFrame(good, r.read());
        assertEquals(v2.length + flags.length + kind.length, r.rejectedBytes());
        assertEquals(0, r.discardedBytes());
    }

    @Test
    void headerNotJsonOrNotAnObjectIsSkipped() throws Exception {
        byte[] notJson = RawFrames.frame(1, 0x10, 0, 21, "hello", new byte[3]);
        byte[] array = RawFrames.frame(1, 0x10, 0, 22, "[1]", new byte[3]);
        Frame good = echo(23, 5);
        FrameReader r = reader(concat(notJson, array, encode(good)));
        assertEquals(21, assertThrows(FrameCorruptException.class, r::read).requestId());
        assertEquals(22, assertThrows(FrameCorruptException.class, r::read).requestId());
        assertSameFrame(good, r.read());
    }

    @Test
    void oversizeHeaderIsRefusedBeforeAllocation() throws Exception {
        FrameLimits small = new FrameLimits(64, 1024);
        byte[] big = RawFrames.frame(1, 0x10, 0, 31, "{\"k\":\"" + "x".repeat(100) + "\"}", new byte[0]);
        Frame good = echo(32, 5);
        FrameReader r = new FrameReader(new ByteArrayInputStream(concat(big, encode(good))), small);
        FrameTooLargeException e = assertThrows(FrameTooLargeException.class, r::read);
        assertEquals(31, e.requestId());
        assertEquals(64, e.limitBytes());
        assertSameFrame(good, r.read());
    }

    /** 1 GiB declared, 1 GiB actually streamed; the reader allocates neither and finds the next frame. */
    @Test
    void oneGibibyteBodyIsSkippedWithoutAllocationAndTheNextFrameReads() throws Exception {
        long gib = 1L << 30;
        byte[] prefix = RawFrames.prefix(1, 0x10, 0, 41, 0, gib);
        Frame good = echo(42, 5);
        InputStream in = new SequenceInputStream(new ByteArrayInputStream(prefix),
                new SequenceInputStream(new ZeroStream(gib), new ByteArrayInputStream(encode(good))));
        FrameReader r = new FrameReader(in, FrameLimits.ofBody(1024));
        long before = RawFrames.allocatedBytes();
        FrameTooLargeException e = assertThrows(FrameTooLargeException.class, r::read);
        assertEquals(41, e.requestId());
        assertEquals(gib, e.declaredBytes());
        assertTrue(RawFrames.allocatedBytes() - before < (1 << 20), "thrown on the prefix, nothing allocated");
        assertSameFrame(good, r.read());
        assertTrue(RawFrames.allocatedBytes() - before < (4 << 20), "skipping allocates nothing of that size");
        assertEquals(28 + gib, r.rejectedBytes());
    }

    /** A peer declares 64 MiB and sends a thousand bytes: the reader never holds 64 MiB for it. */
    @Test
    @Tag("security")
    void aBodyDeclaredLargeButCutShortIsNeverAllocatedAtItsDeclaredLength() throws Exception {
        byte[] prefix = RawFrames.prefix(1, 0x10, 0, 61, 0, 64 << 20);
        FrameReader r = new FrameReader(new ByteArrayInputStream(RawFrames.concat(prefix, new byte[1000])),
                FrameLimits.ofBody(64 << 20));
        long before = RawFrames.allocatedBytes();
        FrameTruncatedException e = assertThrows(FrameTruncatedException.class, r::read);
        assertTrue(e.getMessage().contains("1000 of " + (64 << 20)), e.getMessage());
        assertTrue(RawFrames.allocatedBytes() - before < (1 << 20),
                "allocated " + (RawFrames.allocatedBytes() - before) + " bytes for a thousand received");
    }

    @Test
    void truncatedFramesAreReportedAsSuch() throws Exception {
        byte[] all = encode(echo(51, 100));
        for (int cut : new int[] {4, 20, 28, 40, all.length - 1}) {
            FrameReader r = reader(java.util.Arrays.copyOf(all, cut));
            assertThrows(FrameTruncatedException.class, r::read, "cut at " + cut);
        }
    }

    @Test
    void staleBytesAtTheEndAreCountedNotAnError() throws Exception {
        FrameReader r = reader("noise without a frame".getBytes());
        assertNull(r.read());
        assertEquals(21, r.discardedBytes());
    }

    /** An endless, allocation-free stream of zero bytes of a given length. */
    static final class ZeroStream extends InputStream {
        private long left;

        ZeroStream(long length) {
            this.left = length;
        }

        @Override
        public int read() {
            if (left <= 0) {
                return -1;
            }
            left--;
            return 0;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (left <= 0) {
                return -1;
            }
            int n = (int) Math.min(len, left);
            java.util.Arrays.fill(b, off, off + n, (byte) 0);
            left -= n;
            return n;
        }
    }
}
