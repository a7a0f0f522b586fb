package io.qvm.transport;

import java.io.IOException;
import java.time.Duration;
import java.util.Objects;

/**
 * The transport's one failure: no connection to the worker could be made, the connection is gone
 * (or was dropped because a frame stalled or the worker broke the protocol), or the handshake did
 * not complete. {@link #reason()} says which; the message names the endpoint or the session and
 * what to look at. Frames the transport refuses fail with the protocol's
 * {@link io.qvm.protocol.FrameException}, and a worker's typed answer with
 * {@link WorkerErrorException}. In every case the usual reaction is the same: close the transport
 * and replace the sandbox.
 */
public class TransportException extends IOException {
    private static final long serialVersionUID = 1L;

    /** What went wrong. */
    public enum Reason {
        /**
         * No connection to the worker's endpoint could be made: the deadline passed while the
         * socket was still absent or refusing, or the peer (the QEMU process) died first. The
         * message names the endpoint, the number of attempts and the last error (the cause).
         */
        CONNECT_FAILED,
        /**
         * The connection is gone — the peer closed it, the VM died, or the host closed the
         * transport — so no pending request will be answered; they all fail at the same moment.
         */
        CLOSED,
        /**
         * No READY carrying this session's nonce arrived within the handshake deadline. The
         * message counts what arrived instead: zero bytes means the worker never wrote (it did not
         * start, or the guest has not opened its port yet — look at the guest console); bytes
         * without frames mean noise on the port; frames mean a stale or out-of-turn worker.
         */
        HANDSHAKE_TIMEOUT,
        /**
         * The worker began a frame and stopped sending it: after its prefix, no byte arrived for
         * the stall timeout. The host dropped the connection rather than keep the half frame (and
         * wait for it) any longer; every pending request fails with this reason. A worker that
         * does this is stuck or hostile: replace the sandbox. The message names the frame's
         * request id and how many of its declared bytes came.
         */
        FRAME_STALLED,
        /**
         * After the handshake the worker sent something other than one answer per request under
         * that request's id: bytes that are not a frame, a frame no request waits for (an id never
         * sent or already answered, or id 0), an answer of the wrong kind, or a frame the host
         * refused (above the response limit, or with an unusable header, kind or version). The
         * host dropped the connection at that moment: every pending request failed with this
         * failure, and every later one fails with it before anything is written. The message
         * says what the worker sent; the cause, where there is one, is the decoder's
         * {@link io.qvm.protocol.FrameException}. The worker is not to be trusted any more (a
         * document may have taken it over): replace the sandbox, and do not retry the document.
         */
        PROTOCOL_VIOLATION
    }

    private final Reason reason;

    public TransportException(Reason reason, String message) {
        this(reason, message, null);
    }

    public TransportException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /**
     * The {@link Reason#HANDSHAKE_TIMEOUT} failure, with what the handshake discarded meanwhile:
     * {@code staleBytes} outside frames and {@code discardedFrames} frames, {@code discardedSummary}
     * naming them by kind (e.g. {@code "1 READY, 2 rejected"}; may be empty).
     */
    public static TransportException handshakeTimeout(String transportKind, Duration deadline, long staleBytes,
            long discardedFrames, String discardedSummary) {
        return new TransportException(Reason.HANDSHAKE_TIMEOUT, "no READY with this session's nonce on the "
                + transportKind + " transport within " + deadline + "; discarded meanwhile: " + staleBytes
                + " stale bytes and " + discardedFrames + " frames"
                + (discardedSummary.isEmpty() ? "" : " (" + discardedSummary + ")")
                + ". Check that the worker started (guest console) and that host and image are from the same release");
    }

    /** The {@link Reason#FRAME_STALLED} failure of frame {@code requestId}. */
    public static TransportException frameStalled(long requestId, long receivedBytes, long declaredBytes,
            Duration stallTimeout) {
        return new TransportException(Reason.FRAME_STALLED, "frame " + requestId + " stalled: " + receivedBytes
                + " of its " + declaredBytes + " bytes after the prefix arrived, then nothing for " + stallTimeout
                + "; the connection to the worker was dropped (the worker is stuck or hostile: replace the sandbox)");
    }

    /**
     * The {@link Reason#PROTOCOL_VIOLATION} failure: the worker on the {@code transportKind}
     * transport sent {@code what} after READY ({@code cause}: the decoder's reason, or null).
     */
    public static TransportException protocolViolation(String transportKind, String what, Throwable cause) {
        return new TransportException(Reason.PROTOCOL_VIOLATION, "the worker broke the protocol on the "
                + transportKind + " transport after READY: " + what + "; the host dropped the connection and fails"
                + " every request on it (the worker is not to be trusted: replace the sandbox)", cause);
    }

    public Reason reason() {
        return reason;
    }
}
