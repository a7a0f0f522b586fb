package io.qvm.internal.qmp;

/**
 * {@link QmpClient.Builder#connect()} could not establish a negotiated QMP session: the socket
 * never accepted a connection before the deadline, QEMU exited while we waited, the greeting was
 * not a QMP greeting, or {@code qmp_capabilities} failed. The message names the unmet condition;
 * put QEMU's stderr and console tail next to it when you report it.
 */
public final class QmpConnectException extends QmpException {
    private static final long serialVersionUID = 1L;

    /** Why the connection attempt failed. */
    public enum Reason {
        /** The deadline passed (socket not accepting, greeting or capabilities reply missing). */
        DEADLINE,
        /** The supplied process-alive check said QEMU is gone. */
        PROCESS_EXITED,
        /** The socket exists but refused us for a reason retrying will not fix (e.g. permission). */
        UNREACHABLE,
        /** QEMU answered, but not with a QMP greeting and a successful negotiation. */
        HANDSHAKE_FAILED,
        /** The waiting thread was interrupted (its interrupt flag is set again). */
        INTERRUPTED
    }

    private final Reason reason;

    public QmpConnectException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
