package io.qvm;

import io.qvm.protocol.ErrorCode;

/** {@code TOO_LARGE}: The document, or the image it would give, is above a byte limit of the SandboxConfig. */
public class DocumentTooLargeException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public DocumentTooLargeException(String message) {
        super(ErrorCode.TOO_LARGE, message);
    }
}
