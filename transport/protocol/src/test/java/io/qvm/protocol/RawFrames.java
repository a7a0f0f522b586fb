package io.qvm.protocol;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameTooLargeException;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/** Builds frames byte by byte, including the ones no encoder would write (tests only). */
public final class RawFrames {

    private RawFrames() {
    }

    /** A prefix with any field value and a correct CRC-32C. */
    public static byte[] prefix(int version, int kindCode, int flags, long requestId, long headerLength,
            long bodyLength) {
        ByteBuffer b = ByteBuffer.allocate(FrameCodec.PREFIX_BYTES);
        b.putInt(FrameCodec.MAGIC).put((byte) version).put((byte) kindCode).putShort((short) flags)
                .putLong(requestId).putInt((int) headerLength).putInt((int) bodyLength);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, 24);
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /** A whole frame with a raw header string (maybe not JSON) and a body. */
    public static byte[] frame(int version, int kindCode, int flags, long requestId, String header, byte[] body) {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(prefix(version, kindCode, flags, requestId, h.length, body.length));
        out.writeBytes(h);
        out.writeBytes(body);
        return out.toByteArray();
    }

    /** A frame as the real encoder writes it (no limits). */
    public static byte[] encode(Frame f) {
        try {
            return FrameCodec.encode(f, new FrameLimits(FrameLimits.HEADER_CEILING, FrameLimits.BODY_CEILING));
        } catch (FrameTooLargeException e) {
            throw new IllegalStateException(e);
        }
    }

    public static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }

    /** Bytes allocated by the current thread so far (HotSpot's per-thread counter). */
    public static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean())
                .getCurrentThreadAllocatedBytes();
    }
}
