package io.qvm.internal.qmp;

import java.time.Duration;

/**
 * No reply to a command arrived within its deadline. The connection itself is still open; if
 * the reply arrives later it is logged and dropped. A QEMU that stops answering QMP is usually
 * wedged: stop it with signals (see {@code io.qvm.internal.process.StopLadder}).
 */
public final class QmpTimeoutException extends QmpException {
    private static final long serialVersionUID = 1L;

    private final String command;
    private final Duration timeout;

    public QmpTimeoutException(String command, Duration timeout) {
        super("QMP command '" + command + "' got no reply within " + timeout.toMillis()
                + " ms; QEMU may be wedged — stop it with signals", null);
        this.command = command;
        this.timeout = timeout;
    }

    /** The command that timed out. */
    public String command() {
        return command;
    }

    /** The deadline that was exceeded. */
    public Duration timeout() {
        return timeout;
    }
}
