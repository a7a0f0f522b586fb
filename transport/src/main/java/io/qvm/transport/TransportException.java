package io.qvm.transport;

import java.io.IOException;

/**
 * Root of every typed failure of the qvm transport: the frame format ({@link FrameException}),
 * the connection ({@link TransportConnectException}, {@link TransportClosedException}), the
 * handshake ({@link HandshakeTimeoutException}) and the worker's own typed answers
 * ({@link WorkerErrorException}). Each subclass names the unmet condition and what to do.
 */
public abstract class TransportException extends IOException {
    private static final long serialVersionUID = 1L;

    protected TransportException(String message) {
        super(message);
    }

    protected TransportException(String message, Throwable cause) {
        super(message, cause);
    }
}
