package io.qvm;

import io.qvm.protocol.ErrorCode;

/** {@code INTERNAL}: the worker failed for a reason of its own (the message says which, without input). */
public class WorkerInternalException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public WorkerInternalException(ErrorCode code, String message) {
        super(code, message);
    }
}
