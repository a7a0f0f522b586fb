package io.qvm.internal.qmp;

/**
 * QEMU sent something that is not QMP: a line that is not JSON, JSON that is not an object, a
 * greeting that is not a greeting, or a line longer than the client's limit.
 *
 * <p>The client treats this as fatal for the connection (it fails closed): every pending command
 * fails with this exception and the connection is closed, because a reply that could not be read
 * cannot be matched to its command any more. Stop QEMU with signals afterwards.
 */
public final class QmpProtocolException extends QmpException {
    private static final long serialVersionUID = 1L;

    private final String excerpt;

    public QmpProtocolException(String message, String excerpt, Throwable cause) {
        super(excerpt == null ? message : message + ": " + excerpt, cause);
        this.excerpt = excerpt;
    }

    /** A short, sanitised excerpt of the offending input, or {@code null}. */
    public String excerpt() {
        return excerpt;
    }
}
