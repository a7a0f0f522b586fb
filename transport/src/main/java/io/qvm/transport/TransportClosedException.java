package io.qvm.transport;

/**
 * The connection to the worker is gone — the peer closed it, the VM died, or the host closed the
 * transport — so this request (or handshake) will never be answered. Every pending request fails
 * with this exception at the same moment; the cause, when there is one, is what ended the
 * connection. The transport cannot be reused: close it and replace the sandbox.
 */
public final class TransportClosedException extends TransportException {
    private static final long serialVersionUID = 1L;

    public TransportClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
