package io.qvm;

import io.qvm.protocol.ErrorCode;

/** {@code UNSUPPORTED}: The document uses something the worker refuses: scripts, external resources, an unknown format. */
public class UnsupportedDocumentException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public UnsupportedDocumentException(String message) {
        super(ErrorCode.UNSUPPORTED, message);
    }
}
