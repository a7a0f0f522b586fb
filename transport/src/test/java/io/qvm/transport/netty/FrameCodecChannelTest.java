package io.qvm.transport.netty;

import io.qvm.protocol.Messages;
import static io.qvm.protocol.RawFrames.concat;
import static io.qvm.protocol.RawFrames.encode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.EncoderException;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCorruptException;
import io.qvm.protocol.FrameFuzzAccess;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.FrameTruncatedException;
import io.qvm.protocol.RawFrames;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class FrameCodecChannelTest {

    private static final FrameLimits LIMITS = FrameLimits.ofBody(32 << 20);

    private static Frame echo(long id, int bodyBytes) {
        byte[] body = new byte[bodyBytes];
        new Random(id).nextBytes(body);
        return Frame.of(FrameKind.ECHO, id, body);
    }

    private static void assertSameFrame(Frame expected, Object actual) {
        Frame f = assertInstanceOf(Frame.class, actual);
        assertEquals(expected.kind(), f.kind());
        assertEquals(expected.requestId(), f.requestId());
        assertEquals(expected.header().toString(), f.header().toString(), "same JSON (numbers may change node type)");
        assertArrayEquals(expected.body(), f.body());
    }

    private static EmbeddedChannel decoderChannel(FrameLimits limits) {
        return new EmbeddedChannel(new FrameDecoder(limits));
    }

    private static List<Object> drain(EmbeddedChannel ch) {
        List<Object> out = new ArrayList<>();
        Object m;
        while ((m = ch.readInbound()) != null) {
            out.add(m);
        }
        return out;
    }

    @Test
    void encoderWritesTheFormatAndWrapsTheBodyWithoutCopying() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(LIMITS));
        Frame f = echo(5, 1000);
        assertTrue(ch.writeOutbound(f));
        ByteBuf buf = ch.readOutbound();
        assertArrayEquals(encode(f), ByteBufUtil.getBytes(buf));
        CompositeByteBuf composite = assertInstanceOf(CompositeByteBuf.class, buf);
        assertSame(f.body(), composite.component(1).array(), "the body array is wrapped, not copied");
        buf.release();
        assertFalse(ch.finish());
    }

    @Test
    void encoderRefusesAFrameAboveThePeersLimitsBeforeWriting() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder(new FrameLimits(1024, 100)));
        ChannelFuture write = ch.writeOneOutbound(echo(6, 101));
        ch.flushOutbound();
        assertFalse(write.isSuccess());
        EncoderException e = assertInstanceOf(EncoderException.class, write.cause());
        assertInstanceOf(FrameTooLargeException.class, e.getCause());
        assertNull(ch.readOutbound(), "nothing written");
    }

    @Test
    void roundTripOfEveryKindThroughEncoderAndDecoder() {
        EmbeddedChannel out = new EmbeddedChannel(new FrameEncoder(LIMITS));
        EmbeddedChannel in = decoderChannel(LIMITS);
        List<Frame> sent = new ArrayList<>();
        for (FrameKind k : FrameKind.values()) {
            Frame f = Frame.of(k, k.code(), new byte[k.code()]);
            sent.add(f);
            out.writeOutbound(f);
        }
        sent.add(Frame.of(FrameKind.GOODBYE, 99, (byte[]) null));
        out.writeOutbound(sent.get(sent.size() - 1));
        ByteBuf b;
        while ((b = out.readOutbound()) != null) {
            in.writeInbound(b);
        }
        List<Object> got = drain(in);
        assertEquals(sent.size(), got.size());
        for (int i = 0; i < sent.size(); i++) {
            assertSameFrame(sent.get(i), got.get(i));
        }
    }

    @Test
    void aFrameSplitIntoOneByteChunks() {
        EmbeddedChannel ch = decoderChannel(LIMITS);
        Frame f = new Frame(FrameKind.ECHO, 7, Messages.toFrame(io.qvm.protocol.Hello.fresh(
                new io.qvm.protocol.Limits(1, 1, 1, 1, 1, 1))).header(), new byte[300]);
        byte[] all = concat("Q stale".getBytes(), encode(f));
        for (byte b : all) {
            ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {b}));
        }
        List<Object> got = drain(ch);
        assertEquals(1, got.size());
        assertSameFrame(f, got.get(0));
        FrameDecoder d = ch.pipeline().get(FrameDecoder.class);
        assertEquals(7, d.staleBytes());
    }

    @Test
    void manyFramesInOneBufferAndEmptyFrames() {
        EmbeddedChannel ch = decoderChannel(LIMITS);
        Frame a = Frame.of(FrameKind.GOODBYE, 1, (byte[]) null);
        Frame b = echo(2, 10);
        Frame c = Frame.of(FrameKind.GOODBYE, 3, (byte[]) null);
        ch.writeInbound(Unpooled.wrappedBuffer(concat(encode(a), encode(b), encode(c))));
        List<Object> got = drain(ch);
        assertEquals(3, got.size());
        assertSameFrame(a, got.get(0));
        assertSameFrame(b, got.get(1));
        assertSameFrame(c, got.get(2));
    }

    @Test
    void staleBytesWithFakeMagicBadCrcAndBadMagicAreSkippedAndCounted() {
        EmbeddedChannel ch = decoderChannel(LIMITS);
        byte[] badCrc = encode(echo(1, 10));
        badCrc[26] ^= 1;
        byte[] badMagic = encode(echo(2, 10));
        badMagic[0] = 'q';
        byte[] stale = concat("xxQxxQVMxQVMF".getBytes(), badCrc, badMagic);
        Frame good = echo(3, 10);
        ch.writeInbound(Unpooled.wrappedBuffer(concat(stale, encode(good))));
        List<Object> got = drain(ch);
        assertEquals(1, got.size());
        assertSameFrame(good, got.get(0));
        assertEquals(stale.length, ch.pipeline().get(FrameDecoder.class).staleBytes());
    }

    @Test
    void corruptFramesAreRejectedWithTheirIdAndTheStreamGoesOn() {
        EmbeddedChannel ch = decoderChannel(LIMITS);
        byte[] v2 = RawFrames.frame(2, 0x10, 0, 11, "{}", new byte[7]);
        byte[] flags = RawFrames.frame(1, 0x10, 4, 12, "{}", new byte[7]);
        byte[] kind = RawFrames.frame(1, 0x66, 0, 13, "{}", new byte[7]);
        byte[] notJson = RawFrames.frame(1, 0x11, 0, 14, "nope", new byte[7]);
        byte[] notObject = RawFrames.frame(1, 0x11, 0, 15, "[]", new byte[7]);
        Frame good = echo(16, 10);
        ch.writeInbound(Unpooled.wrappedBuffer(concat(v2, flags, kind, notJson, notObject, encode(good))));
        List<Object> got = drain(ch);
        assertEquals(6, got.size());
        for (int i = 0; i < 5; i++) {
            RejectedFrame r = assertInstanceOf(RejectedFrame.class, got.get(i));
            assertEquals(11 + i, r.requestId());
            assertInstanceOf(FrameCorruptException.class, r.reason());
        }
        assertSameFrame(good, got.get(5));
        FrameDecoder d = ch.pipeline().get(FrameDecoder.class);
        assertEquals(5, d.rejectedFrames());
        assertEquals(v2.length + flags.length + kind.length + notJson.length + notObject.length, d.rejectedBytes());
        assertEquals(0, d.staleBytes());
    }

    /** Discard mode: 1 GiB declared and streamed; rejected at once, skipped unbuffered, then the next frame. */
    @Test
    void oneGibibyteFrameIsRejectedAtOnceDiscardedAndTheNextFrameDecodes() {
        EmbeddedChannel ch = decoderChannel(FrameLimits.ofBody(1024));
        long gib = 1L << 30;
        long before = RawFrames.allocatedBytes();
        ch.writeInbound(Unpooled.wrappedBuffer(RawFrames.prefix(1, 0x11, 0, 41, 0, gib)));
        RejectedFrame r = assertInstanceOf(RejectedFrame.class, ch.readInbound());
        assertEquals(41, r.requestId());
        FrameTooLargeException e = assertInstanceOf(FrameTooLargeException.class, r.reason());
        assertEquals(gib, e.declaredBytes());
        ByteBuf mib = Unpooled.directBuffer(1 << 20).writeZero(1 << 20);
        for (int i = 0; i < 1024; i++) {
            ch.writeInbound(mib.retainedDuplicate());
        }
        mib.release();
        Frame good = echo(42, 100);
        ch.writeInbound(Unpooled.wrappedBuffer(encode(good)));
        List<Object> got = drain(ch);
        assertEquals(1, got.size());
        assertSameFrame(good, got.get(0));
        assertTrue(RawFrames.allocatedBytes() - before < (64 << 20), "nothing near 1 GiB was allocated");
        assertEquals(28 + gib, ch.pipeline().get(FrameDecoder.class).rejectedBytes());
    }

    @Test
    void oversizeHeaderIsRejected() {
        EmbeddedChannel ch = decoderChannel(new FrameLimits(16, 1024));
        byte[] big = RawFrames.frame(1, 0x11, 0, 51, "{\"a\":\"" + "x".repeat(40) + "\"}", new byte[0]);
        Frame good = echo(52, 3);
        ch.writeInbound(Unpooled.wrappedBuffer(concat(big, encode(good))));
        List<Object> got = drain(ch);
        RejectedFrame r = assertInstanceOf(RejectedFrame.class, got.get(0));
        assertEquals(51, r.requestId());
        assertInstanceOf(FrameTooLargeException.class, r.reason());
        assertSameFrame(good, got.get(1));
    }

    @Test
    void aStreamEndingInsideAFrameGivesATruncatedRejection() {
        EmbeddedChannel ch = decoderChannel(LIMITS);
        byte[] all = encode(echo(61, 100));
        ch.writeInbound(Unpooled.wrappedBuffer(java.util.Arrays.copyOf(all, 60)));
        assertNull(ch.readInbound());
        ch.finish();
        RejectedFrame r = assertInstanceOf(RejectedFrame.class, ch.readInbound());
        assertEquals(61, r.requestId());
        assertInstanceOf(FrameTruncatedException.class, r.reason());
    }

    @Test
    void aStreamEndingInsideStaleBytesJustCountsThem() {
        FrameDecoder d = new FrameDecoder(LIMITS);
        EmbeddedChannel ch = new EmbeddedChannel(d);
        ch.writeInbound(Unpooled.wrappedBuffer("abcQVMF12".getBytes()));
        ch.finish();
        assertNull(ch.readInbound());
        assertEquals(9, d.staleBytes());
    }

    @Test
    void randomChunkingOfGarbageAndFramesYieldsEveryFrame() {
        for (long seed = 1; seed <= 100; seed++) {
            Random rnd = new Random(seed);
            EmbeddedChannel ch = decoderChannel(new FrameLimits(1024, 64 * 1024));
            List<Frame> sent = new ArrayList<>();
            java.io.ByteArrayOutputStream stream = new java.io.ByteArrayOutputStream();
            for (int i = 0; i < 1 + rnd.nextInt(6); i++) {
                stream.writeBytes(FrameFuzzAccess.garbage(rnd, rnd.nextInt(2000)));
                Frame f = echo(rnd.nextInt(1_000_000), rnd.nextInt(4000));
                sent.add(f);
                stream.writeBytes(encode(f));
            }
            byte[] all = stream.toByteArray();
            int pos = 0;
            while (pos < all.length) {
                int n = Math.min(all.length - pos, 1 + rnd.nextInt(700));
                ch.writeInbound(Unpooled.wrappedBuffer(all, pos, n));
                pos += n;
            }
            List<Object> got = drain(ch);
            List<Object> frames = got.stream().filter(o -> o instanceof Frame).toList();
            assertEquals(sent.size(), frames.size(), "seed " + seed);
            for (int i = 0; i < sent.size(); i++) {
                assertSameFrame(sent.get(i), frames.get(i));
            }
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void pureRandomBytesNeverThrowOrHang() {
        for (long seed = 1; seed <= 100; seed++) {
            Random rnd = new Random(seed);
            EmbeddedChannel ch = decoderChannel(new FrameLimits(1024, 64 * 1024));
            byte[] all = FrameFuzzAccess.garbage(rnd, rnd.nextInt(100_000));
            ch.writeInbound(Unpooled.wrappedBuffer(all));
            for (Object o : drain(ch)) {
                assertTrue(o instanceof Frame || o instanceof RejectedFrame, "seed " + seed + ": " + o);
            }
            ch.finishAndReleaseAll();
            ch.checkException();
        }
    }

    @Test
    void constructorRefusesNull() {
        assertThrows(NullPointerException.class, () -> new FrameDecoder(null));
        assertThrows(NullPointerException.class, () -> new FrameEncoder(null));
    }
}
