package io.qvm.internal.qmp;

/**
 * QEMU answered a command with {@code {"error": {"class": ..., "desc": ...}, "id": ...}}.
 *
 * <p>Decide what to do from {@link #errorClass()} (for example {@code CommandNotFound},
 * {@code GenericError}, {@code DeviceNotFound}); {@link #description()} is QEMU's human text,
 * for messages and logs only — its wording changes between QEMU versions.
 */
public final class QmpErrorException extends QmpException {
    private static final long serialVersionUID = 1L;

    /** The class QEMU reports when a command does not exist (or is not allowed yet). */
    public static final String COMMAND_NOT_FOUND = "CommandNotFound";
    /** QEMU's catch-all error class. */
    public static final String GENERIC_ERROR = "GenericError";

    private final String command;
    private final String errorClass;
    private final String description;

    public QmpErrorException(String command, String errorClass, String description) {
        super("QMP command '" + command + "' failed with error class " + errorClass
                + " (QEMU says: " + description + ")", null);
        this.command = command;
        this.errorClass = errorClass;
        this.description = description;
    }

    /** The command that failed, e.g. {@code query-status}. */
    public String command() {
        return command;
    }

    /** The machine-readable error class; the only part of the error to branch on. */
    public String errorClass() {
        return errorClass;
    }

    /** QEMU's human-readable description; show it, never parse it. */
    public String description() {
        return description;
    }
}
