package io.qvm;

import io.qvm.protocol.ErrorCode;

/**
 * The worker refused or failed a render and said why with a typed {@link ErrorCode}. The sandbox
 * is still usable. The message is the worker's: short, and it never echoes the document.
 */
public class RenderFailedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    public RenderFailedException(ErrorCode code, String message) {
        super(code + ": " + message);
        this.code = code;
    }

    public ErrorCode code() {
        return code;
    }

    /** The exception type for a worker's error code. */
    public static RenderFailedException of(ErrorCode code, String message) {
        return switch (code) {
            case TOO_LARGE -> new DocumentTooLargeException(message);
            case LIMIT_EXCEEDED -> new LimitExceededException(message);
            case PARSE_ERROR -> new DocumentParseException(message);
            case UNSUPPORTED -> new UnsupportedDocumentException(message);
            case BAD_REQUEST -> new BadRequestException(message);
            case TIMEOUT -> new RenderTimeoutException(message);
            case INTERNAL -> new WorkerInternalException(code, message);
        };
    }
}
