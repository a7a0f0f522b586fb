package io.qvm;

import io.qvm.protocol.ErrorCode;

/** {@code PARSE_ERROR}: The document could not be parsed (malformed, truncated, or using a refused construct such as a DTD). */
public class DocumentParseException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public DocumentParseException(String message) {
        super(ErrorCode.PARSE_ERROR, message);
    }
}
