package io.qvm;

import io.qvm.protocol.ErrorCode;

/**
 * {@code TIMEOUT} from the worker itself: it stopped a render that was about to overrun the request
 * deadline and said so in time. The sandbox stays usable. (When the worker cannot answer in time,
 * the host stops the sandbox instead and throws {@link RequestTimeoutException}.)
 */
public class RenderTimeoutException extends RenderFailedException {
    private static final long serialVersionUID = 1L;

    public RenderTimeoutException(String message) {
        super(ErrorCode.TIMEOUT, message);
    }
}
