package io.qvm.internal.qmp;

/**
 * Base of every failure {@link QmpClient} reports. Catch a subclass to act on it:
 *
 * <ul>
 *   <li>{@link QmpErrorException} — QEMU answered the command with an error; branch on
 *       {@link QmpErrorException#errorClass()}, never on the human text.
 *   <li>{@link QmpTimeoutException} — no answer within the command's deadline; the connection
 *       stays usable (a late reply is dropped).
 *   <li>{@link QmpConnectionClosedException} — the connection is gone (QEMU exited, socket error,
 *       local close, or a protocol error made the client close it). Every later command fails
 *       the same way; fall back to signals to stop QEMU.
 *   <li>{@link QmpProtocolException} — QEMU sent something that is not QMP (not JSON, not an
 *       object, or a line over the limit). The client closes the connection after this.
 *   <li>{@link QmpConnectException} — {@link QmpClient.Builder#connect()} could not reach a
 *       negotiated QMP session (deadline, QEMU died, bad greeting).
 * </ul>
 */
public abstract class QmpException extends Exception {
    private static final long serialVersionUID = 1L;

    protected QmpException(String message, Throwable cause) {
        super(message, cause);
    }
}
