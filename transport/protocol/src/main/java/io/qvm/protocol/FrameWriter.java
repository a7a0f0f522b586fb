package io.qvm.protocol;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Objects;

/**
 * Writes frames to a blocking stream (the worker's stdout). Thread-safe: each frame is written
 * whole and flushed under a lock, so frames from several threads never interleave.
 */
public final class FrameWriter {

    private final OutputStream out;
    private final FrameLimits peerLimits;

    /**
     * @param peerLimits what the reader on the other side accepts; a frame above them is refused
     *     here, before any byte is written
     */
    public FrameWriter(OutputStream out, FrameLimits peerLimits) {
        this.out = Objects.requireNonNull(out, "out");
        this.peerLimits = Objects.requireNonNull(peerLimits, "peerLimits");
    }

    public synchronized void write(Frame frame) throws IOException {
        byte[] head = FrameCodec.encodePrefixAndHeader(frame, peerLimits);
        out.write(head);
        out.write(frame.body());
        out.flush();
    }
}
