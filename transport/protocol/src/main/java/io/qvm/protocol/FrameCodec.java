package io.qvm.protocol;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The qvm frame format, version 1: the single definition both the host and the worker use.
 *
 * <pre>
 *  offset  size  field
 *  ------  ----  -----------------------------------------------------------------
 *       0     4  magic            'Q' 'V' 'M' 'F'  (0x51 0x56 0x4D 0x46)
 *       4     1  version          1
 *       5     1  kind             {@link FrameKind#code()}
 *       6     2  flags            0 (reserved; a reader rejects any other value)
 *       8     8  request id       signed 64-bit, chosen by the host; replies echo it
 *      16     4  header length H  unsigned, 0 ≤ H ≤ limits.maxHeaderBytes
 *      20     4  body length B    unsigned, 0 ≤ B ≤ limits.maxBodyBytes
 *      24     4  CRC-32C of bytes 0..23
 *      28     H  header           UTF-8 JSON object ({@code H = 0} means {})
 *    28+H     B  body             opaque bytes
 * </pre>
 *
 * All integers are big-endian. The 28-byte prefix is self-checking: a reader that lost its place
 * (a virtio-serial port keeps bytes from an earlier session) scans for the magic and accepts a
 * prefix only if its CRC-32C matches, so stale bytes cannot pass for a frame by accident of a
 * four-byte match. Both lengths are checked against the reader's {@link FrameLimits} before a
 * single byte of header or body is allocated.
 */
public final class FrameCodec {

    /** "QVMF". */
    public static final int MAGIC = 0x51564D46;
    public static final int VERSION = 1;
    public static final int PREFIX_BYTES = 28;

    /**
     * Strict JSON: a header with trailing content ({@code {} {}}) or a duplicate key is refused
     * rather than read one way here and another way by the peer.
     */
    static final ObjectMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    private FrameCodec() {
    }

    /** The decoded, checksum-verified 28-byte prefix of a frame. */
    public record Prefix(int version, int kindCode, int flags, long requestId, long headerLength, long bodyLength) {
        public long frameLength() {
            return PREFIX_BYTES + headerLength + bodyLength;
        }
    }

    /** Whether the four bytes at {@code offset} are the magic (whatever the buffer's byte order). */
    public static boolean isMagicAt(ByteBuffer buf, int offset) {
        return bigEndian(buf).getInt(offset) == MAGIC;
    }

    /**
     * Decodes the prefix at {@code offset} (absolute; the buffer's position is not moved), or
     * returns {@code null} when these 28 bytes are not a frame prefix (wrong magic or checksum):
     * the caller then skips one byte and looks again. The buffer must hold at least
     * {@link #PREFIX_BYTES} bytes from {@code offset} on; its byte order does not matter.
     */
    public static Prefix decodePrefix(ByteBuffer buffer, int offset) {
        ByteBuffer buf = bigEndian(buffer);
        if (buf.getInt(offset) != MAGIC) {
            return null;
        }
        CRC32C crc = new CRC32C();
        ByteBuffer covered = buf.duplicate();
        covered.limit(offset + 24).position(offset);
        crc.update(covered);
        int stored = buf.getInt(offset + 24);
        if ((int) crc.getValue() != stored) {
            return null;
        }
        return new Prefix(
                buf.get(offset + 4) & 0xFF,
                buf.get(offset + 5) & 0xFF,
                buf.getShort(offset + 6) & 0xFFFF,
                buf.getLong(offset + 8),
                buf.getInt(offset + 16) & 0xFFFFFFFFL,
                buf.getInt(offset + 20) & 0xFFFFFFFFL);
    }

    private static ByteBuffer bigEndian(ByteBuffer buf) {
        return buf.order() == ByteOrder.BIG_ENDIAN ? buf : buf.duplicate().order(ByteOrder.BIG_ENDIAN);
    }

    /**
     * Checks a verified prefix against the limits and this reader's version. Throws the typed
     * error the frame deserves; the caller must still skip the frame's bytes
     * ({@link Prefix#frameLength()}) to stay in step.
     */
    public static FrameKind validate(Prefix p, FrameLimits limits) throws FrameException {
        FrameKind kind = FrameKind.fromCode(p.kindCode());
        if (p.version() != VERSION) {
            throw new FrameCorruptException(p.requestId(),
                    "frame " + p.requestId() + " has protocol version " + p.version() + "; this side speaks " + VERSION
                            + " (host and guest image are from different qvm releases: rebuild the image)");
        }
        if (p.flags() != 0) {
            throw new FrameCorruptException(p.requestId(), "frame " + p.requestId() + " has reserved flags 0x"
                    + Integer.toHexString(p.flags()) + " set");
        }
        if (kind == null) {
            throw new FrameCorruptException(p.requestId(), "frame " + p.requestId() + " has unknown kind 0x"
                    + Integer.toHexString(p.kindCode()));
        }
        if (p.headerLength() > limits.maxHeaderBytes()) {
            throw new FrameTooLargeException(kind, p.requestId(), "header", p.headerLength(), limits.maxHeaderBytes());
        }
        if (p.bodyLength() > limits.maxBodyBytes()) {
            throw new FrameTooLargeException(kind, p.requestId(), "body", p.bodyLength(), limits.maxBodyBytes());
        }
        return kind;
    }

    /** Parses a header's bytes (already bounded by the limits) into a JSON object. */
    public static ObjectNode decodeHeader(long requestId, byte[] bytes) throws FrameCorruptException {
        if (bytes.length == 0) {
            return JSON.createObjectNode();
        }
        JsonNode node;
        try {
            node = JSON.readTree(bytes);
        } catch (IOException e) {
            throw new FrameCorruptException(requestId, "frame " + requestId + " has a header that is not JSON");
        }
        if (!(node instanceof ObjectNode obj)) {
            throw new FrameCorruptException(requestId, "frame " + requestId + " has a header that is not a JSON object");
        }
        return obj;
    }

    /**
     * Encodes the prefix and header of {@code frame} (the body follows them on the wire and is
     * written by the caller, so large bodies are never copied).
     *
     * @throws FrameTooLargeException if the frame exceeds {@code limits} — a sender checks its
     *     own output against the peer's limits before writing anything
     */
    public static byte[] encodePrefixAndHeader(Frame frame, FrameLimits limits) throws FrameTooLargeException {
        byte[] header;
        try {
            header = frame.header().isEmpty() ? new byte[0] : JSON.writeValueAsBytes(frame.header());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON object node could not be written", e);
        }
        if (header.length > limits.maxHeaderBytes()) {
            throw new FrameTooLargeException(frame.kind(), frame.requestId(), "header", header.length, limits.maxHeaderBytes());
        }
        if (frame.body().length > limits.maxBodyBytes()) {
            throw new FrameTooLargeException(frame.kind(), frame.requestId(), "body", frame.body().length, limits.maxBodyBytes());
        }
        ByteBuffer out = ByteBuffer.allocate(PREFIX_BYTES + header.length);
        out.putInt(MAGIC).put((byte) VERSION).put((byte) frame.kind().code()).putShort((short) 0)
                .putLong(frame.requestId()).putInt(header.length).putInt(frame.body().length);
        CRC32C crc = new CRC32C();
        crc.update(out.array(), 0, 24);
        out.putInt((int) crc.getValue());
        out.put(header);
        return out.array();
    }

    /** The whole frame as one array (tests and small frames). */
    public static byte[] encode(Frame frame, FrameLimits limits) throws FrameTooLargeException {
        byte[] head = encodePrefixAndHeader(frame, limits);
        byte[] all = new byte[head.length + frame.body().length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(frame.body(), 0, all, head.length, frame.body().length);
        return all;
    }
}
