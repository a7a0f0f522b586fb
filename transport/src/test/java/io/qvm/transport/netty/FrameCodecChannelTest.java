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
import io.qvm.transport.TransportException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
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

    /** Frames and rejections, in order ({@link StaleBytes} reports are left out: {@link #drainAll}). */
    private static List<Object> drain(EmbeddedChannel ch) {
        return drainAll(ch).stream().filter(m -> !(m instanceof StaleBytes)).toList();
    }

    private static List<Object> drainAll(EmbeddedChannel ch) {
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

    /**
     * A peer declares a 64 MiB body and sends a thousand bytes: the decoder holds 64 KiB for it,
     * and allocates nothing near the declared size (before: the whole 64 MiB at the header).
     */
    @Test
    @Tag("security")
    void aDeclaredBodyIsNotAllocatedUntilItsBytesArrive() {
        FrameDecoder d = new FrameDecoder(FrameLimits.ofBody(64 << 20));
        EmbeddedChannel ch = new EmbeddedChannel(d);
        ch.writeInbound(Unpooled.wrappedBuffer(encode(echo(70, 10)))); // Netty's own first-use allocations
        assertSameFrame(echo(70, 10), ch.readInbound());
        long before = RawFrames.allocatedBytes();
        ch.writeInbound(Unpooled.wrappedBuffer(RawFrames.prefix(1, 0x11, 0, 71, 0, 64 << 20), new byte[1000]));
        assertNull(ch.readInbound());
        assertEquals(64 * 1024, d.bufferedBytes(), "the first chunk, not the declared 64 MiB");
        assertTrue(RawFrames.allocatedBytes() - before < (8 << 20),
                "allocated " + (RawFrames.allocatedBytes() - before) + " bytes for a thousand received");
        byte[] rest = new byte[(64 << 20) - 1000];
        new Random(71).nextBytes(rest);
        for (int off = 0; off < rest.length; off += 1 << 20) { // the honest end: it grows and completes
            ch.writeInbound(Unpooled.wrappedBuffer(rest, off, Math.min(1 << 20, rest.length - off)));
            assertTrue(d.bufferedBytes() <= Math.max(64 * 1024, 2L * (1000 + off + (1 << 20))), d.bufferedBytes() + "");
        }
        Frame f = assertInstanceOf(Frame.class, ch.readInbound());
        assertEquals(64 << 20, f.body().length);
        assertArrayEquals(rest, java.util.Arrays.copyOfRange(f.body(), 1000, f.body().length));
        assertEquals(0, d.bufferedBytes(), "released once delivered");
        assertFalse(ch.finish());
    }

    /**
     * The stall timer, on the embedded event loop's own clock (no sleeping): a frame that gets no
     * byte for the stall timeout drops the channel with FRAME_STALLED; a byte resets the wait.
     */
    @Test
    @Tag("security")
    void aFrameThatStallsIsDroppedWithTheConnectionAfterTheStallTimeout() {
        FrameDecoder d = new FrameDecoder(FrameLimits.ofBody(64 << 20), Duration.ofSeconds(5));
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.freezeTime();
        ch.pipeline().addLast(d);
        ch.writeInbound(Unpooled.wrappedBuffer(RawFrames.prefix(1, 0x11, 0, 72, 0, 64 << 20), new byte[1000]));
        ch.advanceTimeBy(4, TimeUnit.SECONDS);
        ch.runScheduledPendingTasks();
        assertTrue(ch.isOpen(), "4 s without a byte is not a stall yet");
        ch.writeInbound(Unpooled.wrappedBuffer(new byte[1000]));
        ch.advanceTimeBy(4, TimeUnit.SECONDS);
        ch.runScheduledPendingTasks();
        assertTrue(ch.isOpen(), "the second thousand bytes started the wait again");
        ch.advanceTimeBy(2, TimeUnit.SECONDS);
        ch.runScheduledPendingTasks();
        assertFalse(ch.isOpen(), "6 s after the last byte: dropped");
        TransportException e = assertThrows(TransportException.class, ch::checkException);
        assertEquals(TransportException.Reason.FRAME_STALLED, e.reason());
        assertTrue(e.getMessage().contains("frame 72 stalled: 2000 of its 67108864 bytes"), e.getMessage());
        assertEquals(0, d.bufferedBytes(), "the half frame is let go");
        assertEquals(1, d.rejectedFrames());
        assertNull(ch.readInbound(), "nothing is delivered for it");
    }

    @Test
    void aStallInsideTheHeaderOrInDiscardModeIsAStallToo() {
        FrameDecoder d = new FrameDecoder(FrameLimits.ofBody(1024), Duration.ofSeconds(5));
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.freezeTime();
        ch.pipeline().addLast(d);
        ch.writeInbound(Unpooled.wrappedBuffer(RawFrames.prefix(1, 0x11, 0, 73, 100, 0), new byte[10]));
        ch.advanceTimeBy(6, TimeUnit.SECONDS);
        ch.runScheduledPendingTasks();
        assertFalse(ch.isOpen());
        assertTrue(assertThrows(TransportException.class, ch::checkException).getMessage()
                .contains("frame 73 stalled: 10 of its 100 bytes"));

        FrameDecoder d2 = new FrameDecoder(FrameLimits.ofBody(1024), Duration.ofSeconds(5));
        EmbeddedChannel ch2 = new EmbeddedChannel();
        ch2.freezeTime();
        ch2.pipeline().addLast(d2);
        ch2.writeInbound(Unpooled.wrappedBuffer(RawFrames.prefix(1, 0x11, 0, 74, 0, 1 << 20), new byte[10]));
        assertInstanceOf(RejectedFrame.class, ch2.readInbound(), "too large: rejected at once");
        ch2.advanceTimeBy(6, TimeUnit.SECONDS);
        ch2.runScheduledPendingTasks();
        assertFalse(ch2.isOpen(), "and its skipping stalled");
        assertEquals(TransportException.Reason.FRAME_STALLED,
                assertThrows(TransportException.class, ch2::checkException).reason());
        assertEquals(1, d2.rejectedFrames(), "counted once");
    }

    @Test
    void completeFramesArmNoTimerAndAnIdleChannelBetweenFramesIsNoStall() {
        FrameDecoder d = new FrameDecoder(LIMITS, Duration.ofSeconds(5));
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.freezeTime();
        ch.pipeline().addLast(d);
        byte[] all = encode(echo(75, 100));
        ch.writeInbound(Unpooled.wrappedBuffer(java.util.Arrays.copyOf(all, 50)));
        ch.writeInbound(Unpooled.wrappedBuffer(java.util.Arrays.copyOfRange(all, 50, all.length)));
        assertSameFrame(echo(75, 100), ch.readInbound());
        ch.advanceTimeBy(60, TimeUnit.SECONDS);
        ch.runScheduledPendingTasks();
        assertTrue(ch.isOpen(), "no frame in progress: silence is fine");
        ch.writeInbound(Unpooled.wrappedBuffer(encode(echo(76, 3))));
        assertSameFrame(echo(76, 3), ch.readInbound());
        ch.checkException();
    }

    @Test
    void theStallTimeoutMustBePositive() {
        assertThrows(IllegalArgumentException.class, () -> new FrameDecoder(LIMITS, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> new FrameDecoder(LIMITS, Duration.ofSeconds(-1)));
        assertThrows(NullPointerException.class, () -> new FrameDecoder(LIMITS, null));
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
        assertEquals(new StaleBytes(3), ch.readInbound(), "up to the 'Q' that may begin a prefix");
        assertNull(ch.readInbound(), "the incomplete prefix the end cut off is counted, not reported");
        assertEquals(9, d.staleBytes());
    }

    /**
     * Stale bytes go downstream in stream order, one report per run: before the frame that ends
     * the run, or at the end of the read — so a reader can tell the bytes before a READY from
     * those after it, even within one read.
     */
    @Test
    void staleBytesAreReportedInStreamOrderOncePerRun() {
        EmbeddedChannel ch = decoderChannel(LIMITS);
        Frame a = echo(81, 10);
        Frame b = echo(82, 10);
        byte[] fake = encode(echo(83, 10));
        fake[0] = 'q'; // a whole frame with a broken magic is stale too
        ch.writeInbound(Unpooled.wrappedBuffer(concat("0123456".getBytes(), encode(a), fake, "xy".getBytes(),
                encode(b), "tail".getBytes())));
        List<Object> got = drainAll(ch);
        assertEquals(5, got.size(), got::toString);
        assertEquals(new StaleBytes(7), got.get(0));
        assertSameFrame(a, got.get(1));
        assertEquals(new StaleBytes(fake.length + 2), got.get(2));
        assertSameFrame(b, got.get(3));
        assertEquals(new StaleBytes(4), got.get(4), "the run at the end of the read");
        assertEquals(7 + fake.length + 2 + 4, ch.pipeline().get(FrameDecoder.class).staleBytes());
        ch.writeInbound(Unpooled.wrappedBuffer("more".getBytes()));
        assertEquals(new StaleBytes(4), ch.readInbound(), "a new read, a new report");
        assertNull(ch.readInbound());
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
