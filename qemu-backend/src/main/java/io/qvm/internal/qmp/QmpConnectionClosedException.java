package io.qvm.internal.qmp;

/**
 * The QMP connection is closed; the command could not be (or was not) answered. {@link #origin()}
 * says who closed it. After {@code quit}, a closed connection is success, and
 * {@link QmpClient#quit(java.time.Duration)} treats it so.
 */
public final class QmpConnectionClosedException extends QmpException {
    private static final long serialVersionUID = 1L;

    /** Who or what closed the connection. */
    public enum Origin {
        /** QEMU closed its end (EOF): it quit or is exiting. */
        PEER_EOF,
        /** A socket error (e.g. connection reset, which QEMU often causes on exit). */
        IO_ERROR,
        /** Someone called {@link QmpClient#close()}. */
        LOCAL_CLOSE,
        /** The client closed it after a {@link QmpProtocolException}. */
        PROTOCOL_ERROR
    }

    private final Origin origin;

    public QmpConnectionClosedException(Origin origin, String message, Throwable cause) {
        super(message, cause);
        this.origin = origin;
    }

    public Origin origin() {
        return origin;
    }

    /** True when QEMU's side went away (EOF or socket error) rather than this client closing. */
    public boolean closedByPeer() {
        return origin == Origin.PEER_EOF || origin == Origin.IO_ERROR;
    }

    /** A copy carrying this instance's origin and message, with a fresh stack for the caller. */
    QmpConnectionClosedException forCommand(String command) {
        return new QmpConnectionClosedException(origin,
                "QMP command '" + command + "' failed: " + getMessage(), this);
    }
}
