package io.qvm;

import io.qvm.protocol.ErrorCode;

/** {@code BAD_REQUEST}: The worker did not understand the request itself (not the document): a host/worker version mismatch or a bug. */
public class BadRequestException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public BadRequestException(String message) {
        super(ErrorCode.BAD_REQUEST, message);
    }
}
