package io.qvm.protocol;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.protocol.util.GrowingBytes;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * Reads frames from a blocking stream (the worker's stdin; tests). Not thread-safe: one reader
 * thread.
 *
 * <p>Stale bytes before a frame — an earlier session's tail on a virtio-serial port, console
 * noise — are skipped: the reader slides a 28-byte window until it holds a prefix whose magic and
 * CRC-32C both match, and counts what it skipped ({@link #discardedBytes()}). A frame whose
 * prefix is sound but whose lengths exceed the limits is skipped without allocation and reported
 * as {@link FrameTooLargeException}; the next {@link #read()} goes on with the following frame.
 * An accepted frame's header and body are not allocated at their declared lengths either: they
 * grow as the bytes arrive ({@link GrowingBytes}), so a peer that declares a large body and
 * stops after a few bytes holds little memory while the reader waits.
 *
 * <p>A rejected frame is reported <em>before</em> its bytes are skipped: the exception comes as
 * soon as the prefix is read (so a worker can answer TOO_LARGE while the oversize body is still
 * arriving), and the next {@link #read()} first skips the rest of that frame, counting it in
 * {@link #rejectedBytes()}. So after a {@link FrameException}, keep reading with the same reader;
 * between two successfully read frames it holds no bytes, and another reader may take over the
 * stream.
 */
public final class FrameReader {

    private final InputStream in;
    private final FrameLimits limits;
    private final byte[] window = new byte[FrameCodec.PREFIX_BYTES];
    private final ByteBuffer windowBuf = ByteBuffer.wrap(window);
    private final byte[] scratch = new byte[8192];
    private int filled;
    private long discarded;
    private long rejected;
    private long skipLeft;
    private long skipRequestId;

    public FrameReader(InputStream in, FrameLimits limits) {
        this.in = Objects.requireNonNull(in, "in");
        this.limits = Objects.requireNonNull(limits, "limits");
    }

    /** Bytes skipped so far while looking for a frame. */
    public long discardedBytes() {
        return discarded;
    }

    /** Bytes of rejected frames (too large, corrupt) skipped so far, their prefixes included. */
    public long rejectedBytes() {
        return rejected;
    }

    /**
     * The next frame, or {@code null} when the stream ends between frames (stale bytes at the
     * end are counted as discarded).
     *
     * @throws FrameTooLargeException a frame above the limits was skipped
     * @throws FrameCorruptException a frame with a sound prefix had an unusable header or kind; it was skipped
     * @throws FrameTruncatedException the stream ended inside a frame
     */
    public Frame read() throws IOException {
        if (skipLeft > 0) {
            long left = skipLeft;
            skipLeft = 0;
            skip(left, skipRequestId);
        }
        FrameCodec.Prefix prefix = nextPrefix();
        if (prefix == null) {
            return null;
        }
        filled = 0;
        FrameKind kind;
        try {
            kind = FrameCodec.validate(prefix, limits);
        } catch (FrameException e) {
            rejected += FrameCodec.PREFIX_BYTES;
            skipLeft = prefix.headerLength() + prefix.bodyLength();
            skipRequestId = prefix.requestId();
            throw e;
        }
        byte[] header = readExactly((int) prefix.headerLength(), prefix.requestId());
        byte[] body = readExactly((int) prefix.bodyLength(), prefix.requestId());
        ObjectNode headerNode;
        try {
            headerNode = FrameCodec.decodeHeader(prefix.requestId(), header);
        } catch (FrameCorruptException e) {
            rejected += FrameCodec.PREFIX_BYTES + header.length + body.length;
            throw e;
        }
        return new Frame(kind, prefix.requestId(), headerNode, body);
    }

    private FrameCodec.Prefix nextPrefix() throws IOException {
        while (true) {
            while (filled < window.length) {
                int n = in.read(window, filled, window.length - filled);
                if (n < 0) {
                    return endOfStream();
                }
                filled += n;
            }
            FrameCodec.Prefix p = FrameCodec.decodePrefix(windowBuf, 0);
            if (p != null) {
                return p;
            }
            slideToNextCandidate();
        }
    }

    private FrameCodec.Prefix endOfStream() throws FrameTruncatedException {
        if (filled >= 4 && windowBuf.getInt(0) == FrameCodec.MAGIC) {
            throw new FrameTruncatedException("stream ended inside a frame prefix (" + filled + " of "
                    + FrameCodec.PREFIX_BYTES + " bytes)");
        }
        discarded += filled;
        filled = 0;
        return null;
    }

    /** Drops at least one byte, up to the next byte that could start the magic. */
    private void slideToNextCandidate() {
        int next = 1;
        while (next < filled && window[next] != 'Q') {
            next++;
        }
        System.arraycopy(window, next, window, 0, filled - next);
        filled -= next;
        discarded += next;
    }

    private byte[] readExactly(int length, long requestId) throws IOException {
        GrowingBytes out = new GrowingBytes(length);
        while (!out.isComplete()) {
            if (out.readFrom(in) < 0) {
                throw truncated(requestId, out.filled(), length);
            }
        }
        return out.toArray();
    }

    private void skip(long length, long requestId) throws IOException {
        long left = length;
        while (left > 0) {
            int n = in.read(scratch, 0, (int) Math.min(scratch.length, left));
            if (n < 0) {
                throw truncated(requestId, length - left, length);
            }
            left -= n;
            rejected += n;
        }
    }

    private static FrameTruncatedException truncated(long requestId, long got, long wanted) {
        return new FrameTruncatedException("stream ended inside frame " + requestId + " (" + got + " of " + wanted
                + " bytes after the prefix)");
    }

}
