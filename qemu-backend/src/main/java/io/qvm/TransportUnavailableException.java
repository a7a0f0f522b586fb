package io.qvm;

/** The transport that was asked for cannot be used on this host (e.g. vsock without {@code /dev/vhost-vsock}). */
public class TransportUnavailableException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public TransportUnavailableException(String message) {
        super(message);
    }

    public TransportUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }

    public TransportUnavailableException(String message, Throwable cause, String consoleTail, String stderrTail) {
        super(message, cause, consoleTail, stderrTail);
    }
}
