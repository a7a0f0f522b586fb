package io.qvm.transport.netty;

/**
 * What {@link FrameDecoder} passes downstream, in stream order with the frames, for a run of bytes
 * that belongs to no frame (noise, a broken prefix, what an earlier session left on the port). One
 * run is reported once, before the frame that ends it, or at the end of the read that holds it.
 * Before the handshake's READY this is the session resynchronising; after it, the worker's doing
 * (adr/0003): the dispatcher then takes it for a protocol violation.
 *
 * @param bytes how many bytes were skipped; positive
 */
public record StaleBytes(long bytes) {
    public StaleBytes {
        if (bytes <= 0) {
            throw new IllegalArgumentException("bytes must be positive, was " + bytes);
        }
    }
}
