package io.qvm.transport;

import java.time.Duration;

/**
 * No READY carrying this session's nonce arrived within the handshake deadline. The counts say
 * what did arrive instead: zero bytes means the worker never wrote anything (it did not start,
 * or the guest has not opened its port yet — look at the guest console); bytes without frames
 * mean noise on the port; frames mean a worker that answered someone else (a stale READY with a
 * wrong nonce) or spoke out of turn. The transport is left open; the usual reaction is to close
 * it and kill the VM.
 */
public final class HandshakeTimeoutException extends TransportException {
    private static final long serialVersionUID = 1L;

    private final Duration deadline;
    private final long discardedBytes;
    private final long discardedFrames;

    public HandshakeTimeoutException(String transportKind, Duration deadline, long discardedBytes, long discardedFrames,
            String discardedSummary) {
        super("no READY with this session's nonce on the " + transportKind + " transport within " + deadline
                + "; discarded meanwhile: " + discardedBytes + " stale or rejected bytes and " + discardedFrames
                + " frames" + (discardedSummary.isEmpty() ? "" : " (" + discardedSummary + ")")
                + ". Check that the worker started (guest console) and that host and image are from the same release");
        this.deadline = deadline;
        this.discardedBytes = discardedBytes;
        this.discardedFrames = discardedFrames;
    }

    public Duration deadline() {
        return deadline;
    }

    /** Bytes the frame decoder skipped: stale bytes between frames and the bytes of rejected frames. */
    public long discardedBytes() {
        return discardedBytes;
    }

    /** Whole frames that arrived and were dropped: anything before the right READY. */
    public long discardedFrames() {
        return discardedFrames;
    }
}
