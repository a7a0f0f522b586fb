package io.qvm;

import io.qvm.transport.ErrorCode;

/** {@code INTERNAL} (or a worker-side {@code TIMEOUT}): the worker failed for a reason of its own. */
public class WorkerInternalException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public WorkerInternalException(ErrorCode code, String message) {
        super(code, message);
    }
}
