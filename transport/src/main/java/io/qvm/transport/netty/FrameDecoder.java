package io.qvm.transport.netty;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.concurrent.ScheduledFuture;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameCorruptException;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameTruncatedException;
import io.qvm.protocol.util.GrowingBytes;
import io.qvm.transport.TransportException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Splits a byte stream into {@link Frame}s (format: {@link FrameCodec}), distrusting every byte.
 *
 * <pre>
 *  BEFORE (one read from a virtio-serial port that an earlier session wrote to):
 *  +----------------------+--------------------------------+-------+--------------------------+
 *  | stale: "..Q..QVMF.." | prefix 28 | header H | body B   | junk  | prefix 28 | H' too large |
 *  +----------------------+--------------------------------+-------+--------------------------+
 *
 *  AFTER (what goes downstream, in order):
 *  StaleBytes(n)  Frame(kind, id, header, body)  StaleBytes(j)  RejectedFrame(id', FrameTooLargeException)
 *  where n counts "..Q..QVMF.." and j the junk; staleBytes() sums them, rejectedBytes() the skipped frame.
 * </pre>
 *
 * <ul>
 *   <li><b>Resynchronisation.</b> A prefix is accepted only if its magic and its CRC-32C both
 *   match; otherwise one byte is dropped (and every byte up to the next {@code 'Q'}), counted in
 *   {@link #staleBytes()}. A fake magic inside stale bytes costs a checksum, nothing more. Each
 *   run of dropped bytes also goes downstream, once, as {@link StaleBytes}: before the frame that
 *   ends it, or at the end of the read (so the host sees stale bytes in stream order, the moment
 *   they arrive, and can tell those before the handshake from those after it).</li>
 *   <li><b>Limits before allocation.</b> The header and body lengths are checked against the
 *   {@link FrameLimits} before anything is allocated, and an accepted length is still not
 *   allocated up front (below). A frame above them puts the decoder in
 *   <em>discard mode</em>: a {@link RejectedFrame} carrying the request id goes downstream at
 *   once, and the frame's bytes are skipped as they arrive (never buffered) until the next frame.
 *   The same happens for a sound prefix with a wrong version, reserved flags, an unknown kind or
 *   a header that is not a JSON object.</li>
 *   <li><b>Memory follows the bytes, not the declaration.</b> The header (at most
 *   {@code maxHeaderBytes}) waits in Netty's cumulation buffer; the body is copied out of it as
 *   the bytes arrive, into an array that grows with them ({@link GrowingBytes}: at most twice
 *   what arrived, at least 64 KiB, exactly the body's length once complete). A peer that
 *   declares 64 MiB and sends ten bytes holds 64 KiB ({@link #bufferedBytes()}).</li>
 *   <li><b>Stalls.</b> A frame whose bytes stop coming — its prefix arrived, and then nothing for
 *   the stall timeout ({@link #DEFAULT_STALL_TIMEOUT} unless given) — is dropped with the
 *   connection: the decoder fires a {@link TransportException} with reason
 *   {@link TransportException.Reason#FRAME_STALLED} and closes the channel. The timer runs on the
 *   channel's event loop and is armed only while a frame is incomplete after a read.</li>
 *   <li><b>End of stream.</b> A stream that ends inside a frame gives a {@link RejectedFrame} with
 *   {@link FrameTruncatedException}; one that ends inside stale bytes just counts them (the
 *   last bytes, an incomplete prefix, may be a frame cut off by the end: they are counted but not
 *   passed on as {@link StaleBytes}).</li>
 * </ul>
 *
 * <p>One instance per channel (it keeps state); the counters may be read from any thread.
 */
public final class FrameDecoder extends ByteToMessageDecoder {

    /**
     * How long a frame may wait for its next byte before it is dropped with the connection. Long
     * enough for any honest writer (the worker writes a frame in one go; virtio-serial carries
     * 8.5 MB/s or more), short enough not to keep a stuck sandbox's half frame for long.
     */
    public static final Duration DEFAULT_STALL_TIMEOUT = Duration.ofSeconds(30);

    private enum State { SCAN, HEADER, BODY, DISCARD }

    private final FrameLimits limits;
    private final Duration stallTimeout;
    private final long stallNanos;

    private State state = State.SCAN;
    private FrameCodec.Prefix prefix;
    private FrameKind kind;
    private ObjectNode header;
    private GrowingBytes body;
    private long discardLeft;
    private long lastByteNanos;
    private ScheduledFuture<?> stallCheck;
    private boolean stalled;

    private volatile long staleBytes;
    private long staleRun; // dropped since the last StaleBytes went downstream
    private volatile long rejectedBytes;
    private volatile long rejectedFrames;
    private volatile long bufferedBytes;

    /**
     * A decoder with the {@link #DEFAULT_STALL_TIMEOUT}.
     *
     * @param limits the largest header and body accepted (for the host: the max response size)
     */
    public FrameDecoder(FrameLimits limits) {
        this(limits, DEFAULT_STALL_TIMEOUT);
    }

    /**
     * @param limits the largest header and body accepted (for the host: the max response size)
     * @param stallTimeout how long a begun frame may go without a byte before the connection is
     *     dropped; positive
     */
    public FrameDecoder(FrameLimits limits, Duration stallTimeout) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.stallTimeout = Objects.requireNonNull(stallTimeout, "stallTimeout");
        if (stallTimeout.isNegative() || stallTimeout.isZero()) {
            throw new IllegalArgumentException("stallTimeout must be positive, was " + stallTimeout);
        }
        this.stallNanos = stallTimeout.toNanos();
    }

    /** Bytes dropped while looking for a prefix (stale bytes, noise, broken prefixes). */
    public long staleBytes() {
        return staleBytes;
    }

    /** Bytes of frames that were rejected and skipped (their prefix included). */
    public long rejectedBytes() {
        return rejectedBytes;
    }

    /**
     * Frames that were rejected (each produced one {@link RejectedFrame}) or dropped because
     * they stalled.
     */
    public long rejectedFrames() {
        return rejectedFrames;
    }

    /**
     * Bytes this decoder holds for the body of the frame in progress (the capacity of its array;
     * 0 between frames). The header in progress, at most {@code maxHeaderBytes}, is in Netty's
     * cumulation buffer instead.
     */
    public long bufferedBytes() {
        return bufferedBytes;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (stalled) { // the connection is being dropped: nothing more is delivered
            rejectedBytes += in.readableBytes();
            in.skipBytes(in.readableBytes());
            return;
        }
        lastByteNanos = ctx.executor().ticker().nanoTime(); // decode runs when bytes arrived
        while (step(in, out)) {
            // each step either consumed bytes or changed state; stop when it can do neither
        }
        flushStale(out);
        bufferedBytes = body == null ? 0 : body.capacity();
        if (state != State.SCAN && stallCheck == null) {
            stallCheck = ctx.executor().schedule(() -> checkStall(ctx), stallNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** The stall timer: drops the frame if no byte came for the timeout, else waits the rest. */
    private void checkStall(ChannelHandlerContext ctx) {
        stallCheck = null;
        if (state == State.SCAN || stalled) {
            return; // the frame completed; the next incomplete one arms the timer again
        }
        long idle = ctx.executor().ticker().nanoTime() - lastByteNanos;
        if (idle < stallNanos) {
            stallCheck = ctx.executor().schedule(() -> checkStall(ctx), stallNanos - idle, TimeUnit.NANOSECONDS);
            return;
        }
        long wanted = prefix.headerLength() + prefix.bodyLength();
        long got = switch (state) {
            case HEADER -> internalBuffer().readableBytes();
            case BODY -> prefix.headerLength() + body.filled();
            default -> wanted - discardLeft;
        };
        long requestId = prefix.requestId();
        if (state != State.DISCARD) { // a rejected frame in discard mode was counted when it was rejected
            rejectedFrames++;
            rejectedBytes += FrameCodec.PREFIX_BYTES + got;
        }
        stalled = true;
        reset();
        ctx.fireExceptionCaught(TransportException.frameStalled(requestId, got, wanted, stallTimeout));
        ctx.close();
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        cancelStallCheck();
    }

    private void cancelStallCheck() {
        if (stallCheck != null) {
            stallCheck.cancel(false);
            stallCheck = null;
        }
    }

    /** One move of the state machine; {@code false} when it needs more bytes. */
    private boolean step(ByteBuf in, List<Object> out) {
        switch (state) {
            case SCAN:
                return scan(in, out);
            case HEADER:
                return readHeader(in, out);
            case BODY:
                return readBody(in, out);
            case DISCARD:
                return discard(in);
            default:
                throw new AssertionError(state);
        }
    }

    private boolean scan(ByteBuf in, List<Object> out) {
        if (!in.isReadable()) {
            return false;
        }
        int start = in.readerIndex();
        int q = in.indexOf(start, in.writerIndex(), (byte) 'Q');
        if (q < 0) {
            dropStale(in, in.readableBytes());
            return false;
        }
        if (q > start) {
            dropStale(in, q - start);
        }
        if (in.readableBytes() < FrameCodec.PREFIX_BYTES) {
            return false;
        }
        FrameCodec.Prefix p = FrameCodec.decodePrefix(in.nioBuffer(in.readerIndex(), FrameCodec.PREFIX_BYTES), 0);
        if (p == null) {
            dropStale(in, 1);
            return true;
        }
        flushStale(out); // the run ends here, before this frame
        in.skipBytes(FrameCodec.PREFIX_BYTES);
        try {
            kind = FrameCodec.validate(p, limits);
        } catch (FrameException e) {
            rejectAndDiscard(p, e, out, FrameCodec.PREFIX_BYTES, p.headerLength() + p.bodyLength());
            return true;
        }
        prefix = p;
        state = State.HEADER;
        return true;
    }

    private boolean readHeader(ByteBuf in, List<Object> out) {
        int length = (int) prefix.headerLength();
        if (in.readableBytes() < length) {
            return false; // bounded by limits.maxHeaderBytes(): small enough to cumulate
        }
        byte[] bytes = new byte[length];
        in.readBytes(bytes);
        try {
            header = FrameCodec.decodeHeader(prefix.requestId(), bytes);
        } catch (FrameCorruptException e) {
            rejectAndDiscard(prefix, e, out, FrameCodec.PREFIX_BYTES + length, prefix.bodyLength());
            return true;
        }
        body = new GrowingBytes((int) prefix.bodyLength()); // grows as the bytes arrive
        state = State.BODY;
        return true;
    }

    private boolean readBody(ByteBuf in, List<Object> out) {
        int n = Math.min(in.readableBytes(), body.remaining());
        in.readBytes(body.reserve(n), body.filled(), n);
        body.advance(n);
        if (!body.isComplete()) {
            return false;
        }
        out.add(new Frame(kind, prefix.requestId(), header, body.toArray()));
        reset();
        return true;
    }

    private boolean discard(ByteBuf in) {
        int n = (int) Math.min(in.readableBytes(), discardLeft);
        in.skipBytes(n);
        discardLeft -= n;
        rejectedBytes += n;
        if (discardLeft > 0) {
            return false;
        }
        reset();
        return true;
    }

    private void rejectAndDiscard(FrameCodec.Prefix p, FrameException reason, List<Object> out, long consumed,
            long toSkip) {
        rejectedFrames++;
        rejectedBytes += consumed;
        out.add(new RejectedFrame(p.requestId(), reason));
        prefix = p;
        discardLeft = toSkip;
        state = State.DISCARD;
    }

    private void dropStale(ByteBuf in, int n) {
        in.skipBytes(n);
        staleBytes += n;
        staleRun += n;
    }

    /** Passes the current run of stale bytes downstream, if any. */
    private void flushStale(List<Object> out) {
        if (staleRun > 0) {
            out.add(new StaleBytes(staleRun));
            staleRun = 0;
        }
    }

    private void reset() {
        state = State.SCAN;
        prefix = null;
        kind = null;
        header = null;
        body = null;
        bufferedBytes = 0;
        discardLeft = 0;
    }

    @Override
    protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        decode(ctx, in, out);
        cancelStallCheck();
        if (state == State.HEADER || state == State.BODY) {
            long wanted = prefix.headerLength() + prefix.bodyLength();
            long got = state == State.BODY ? prefix.headerLength() + body.filled() : in.readableBytes();
            rejectedFrames++;
            out.add(new RejectedFrame(prefix.requestId(), truncated(prefix.requestId(), got, wanted)));
        }
        if (in.isReadable()) { // an incomplete prefix or header: counted, not reported (the end cut it off)
            staleBytes += in.readableBytes();
            in.skipBytes(in.readableBytes());
        }
        reset();
    }

    private static FrameTruncatedException truncated(long requestId, long got, long wanted) {
        return new FrameTruncatedException("stream ended inside frame " + requestId + " (" + got + " of " + wanted
                + " bytes after the prefix)");
    }
}
