package io.qvm.transport;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import java.io.IOException;
import java.util.Objects;

/**
 * The worker answered a request with a typed {@link io.qvm.protocol.FrameKind#ERROR} frame. The transport and the
 * worker are fine; this one request failed for the reason in {@link #reply()}. What to do depends
 * on {@link #code()}: {@link ErrorCode#TOO_LARGE} and {@link ErrorCode#LIMIT_EXCEEDED} mean the
 * input asks for more than the configured limits, {@link ErrorCode#PARSE_ERROR} and
 * {@link ErrorCode#UNSUPPORTED} mean a bad document, {@link ErrorCode#INTERNAL} is a worker bug.
 */
public final class WorkerErrorException extends IOException {
    private static final long serialVersionUID = 1L;

    private final transient ErrorReply reply;

    public WorkerErrorException(ErrorReply reply) {
        super("the worker failed request " + Objects.requireNonNull(reply, "reply").requestId() + " with "
                + reply.code() + (reply.message().isEmpty() ? "" : ": " + reply.message()));
        this.reply = reply;
    }

    public ErrorReply reply() {
        return reply;
    }

    public ErrorCode code() {
        return reply.code();
    }
}
