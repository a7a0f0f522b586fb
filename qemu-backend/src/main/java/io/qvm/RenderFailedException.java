package io.qvm;

import io.qvm.protocol.ErrorCode;
import java.util.Objects;

/**
 * The document was refused or could not be rendered, and the worker said why with a typed
 * {@link #code()}; the sandbox is unharmed and stays usable. The message is the worker's (or, for
 * a request refused before it was sent, the host's): short, and it never echoes the document.
 *
 * <p>What a server does differently: answer its own caller that the document is at fault (do not
 * retry it — the same bytes give the same answer), by code:
 * <ul>
 * <li>{@link ErrorCode#BAD_REQUEST}: the request itself is wrong (size, dpi, page…): a bug in the caller;
 * <li>{@link ErrorCode#TOO_LARGE}: the document or the image it would make is above a size limit;
 * <li>{@link ErrorCode#LIMIT_EXCEEDED}: it would cost more than the limits allow (pixels, pages, elements…);
 * <li>{@link ErrorCode#PARSE_ERROR}: it is not a well-formed SVG or PDF;
 * <li>{@link ErrorCode#UNSUPPORTED}: it asks for something the sandbox refuses (external resources, scripts…);
 * <li>{@link ErrorCode#TIMEOUT}: the worker stopped the render itself before the request deadline;
 * <li>{@link ErrorCode#INTERNAL}: the renderer failed on it (a Batik/PDFBox bug); report it.
 * </ul>
 * When the host had to stop the sandbox instead, the failure is a {@link SandboxLostException}.
 */
public final class RenderFailedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    public RenderFailedException(ErrorCode code, String message) {
        super(Objects.requireNonNull(code, "code") + ": " + message);
        this.code = code;
    }

    public ErrorCode code() {
        return code;
    }
}
