package io.qvm;

import io.qvm.protocol.ErrorCode;

/** {@code LIMIT_EXCEEDED}: The document asks for more than a renderer limit allows (pixels, side, pages, nesting). */
public class LimitExceededException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public LimitExceededException(String message) {
        super(ErrorCode.LIMIT_EXCEEDED, message);
    }
}
