package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.util.Objects;

/**
 * A typed failure of one request. The message is written by the worker: short, never a piece of
 * the document, never a stack trace; it goes into the ERROR frame as is.
 */
public final class RenderException extends Exception {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    public RenderException(ErrorCode code, String message) {
        super(message, null, false, false);
        this.code = Objects.requireNonNull(code, "code");
    }

    public ErrorCode code() {
        return code;
    }
}
