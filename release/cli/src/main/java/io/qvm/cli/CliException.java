package io.qvm.cli;

import java.util.Objects;

/**
 * A failure as the CLI reports it: an {@link ExitCode}, a one-paragraph message, an optional
 * machine-readable {@code code} (e.g. the worker's {@code PARSE_ERROR}) and an optional hint
 * (what to do). Thrown by commands; {@link Failures} turns every other exception into one.
 */
public final class CliException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ExitCode exitCode;
    private final String code;
    private final String hint;

    public CliException(ExitCode exitCode, String message) {
        this(exitCode, null, message, null, null);
    }

    public CliException(ExitCode exitCode, String code, String message, String hint, Throwable cause) {
        super(Objects.requireNonNull(message, "message"), cause);
        this.exitCode = Objects.requireNonNull(exitCode, "exitCode");
        this.code = code;
        this.hint = hint;
    }

    public ExitCode exitCode() {
        return exitCode;
    }

    /** A finer, stable error code (e.g. {@code PARSE_ERROR}, {@code QEMU_NOT_FOUND}), or null. */
    public String code() {
        return code;
    }

    /** What to do about it, or null. */
    public String hint() {
        return hint;
    }
}
