package io.qvm.transport;

/**
 * No connection to the worker's endpoint could be made: the deadline passed while the socket was
 * still absent or refusing, or the peer (the QEMU process) died first. The message names the
 * endpoint, the number of attempts and the last error; the cause is that last error.
 */
public final class TransportConnectException extends TransportException {
    private static final long serialVersionUID = 1L;

    public TransportConnectException(String message, Throwable cause) {
        super(message, cause);
    }
}
