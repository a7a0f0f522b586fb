package io.qvm.transport.netty;

import io.qvm.protocol.FrameException;
import java.util.Objects;

/**
 * What {@link FrameDecoder} passes downstream, in stream order with the good frames, for a frame
 * whose prefix checked out (so its request id is trustworthy) but which could not be accepted: too
 * large ({@link io.qvm.protocol.FrameTooLargeException}), an unusable header, kind or version
 * ({@link io.qvm.protocol.FrameCorruptException}), or cut off by the end of the stream
 * ({@link io.qvm.protocol.FrameTruncatedException}). The host fails exactly the request with
 * this id; the decoder has already moved on to the next frame.
 *
 * @param requestId the id from the rejected frame's checksummed prefix
 * @param reason why it was rejected; say it to the caller as it is
 */
public record RejectedFrame(long requestId, FrameException reason) {
    public RejectedFrame {
        Objects.requireNonNull(reason, "reason");
    }
}
