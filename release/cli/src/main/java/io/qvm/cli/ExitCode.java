package io.qvm.cli;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The exit codes of {@code qvm}, one per class of outcome, stable across releases. Shown in
 * every command's help and in docs/cli-json.md; a failure carries its code in a
 * {@link CliException}.
 */
public enum ExitCode {
    /** Success. */
    OK(0, "success"),
    /** Anything not covered below (I/O, a crashed sandbox, a bug). */
    ERROR(1, "error"),
    /** Bad command line: unknown option, missing or invalid argument. */
    USAGE(2, "usage error (bad option or argument)"),
    /** This host cannot run sandboxes: no QEMU, no working accelerator, unsupported OS/CPU. */
    HOST(3, "this host cannot run sandboxes (see qvm doctor)"),
    /** The sandbox did not boot to its worker's READY. */
    BOOT_FAILED(4, "the sandbox failed to boot"),
    /** The worker refused or failed the document (too large, over a limit, unparsable, unsupported). */
    RENDER_FAILED(5, "the render failed (the document was refused or could not be rendered)"),
    /** The request overran its deadline. */
    TIMEOUT(6, "the request timed out"),
    /** No sandbox with that id (or none running). */
    NOT_FOUND(7, "no such sandbox"),
    /** The guest image is missing or does not verify. */
    IMAGE(8, "the guest image is missing or does not verify (./qvm image build)"),
    /** {@code qvm release}: a step failed (the report names it); nothing was published or installed. */
    RELEASE_FAILED(9, "a release step failed; nothing was published"),
    /** {@code qvm selftest}: a step failed (the report names it and its evidence). */
    SELFTEST_FAILED(10, "a selftest step failed (the report names it)"),
    /** Interrupted (Ctrl-C / SIGINT). */
    INTERRUPTED(130, "interrupted (Ctrl-C)");

    private final int code;
    private final String description;

    ExitCode(int code, String description) {
        this.code = code;
        this.description = description;
    }

    public int code() {
        return code;
    }

    public String description() {
        return description;
    }

    /** The code for a process exit value, or {@link #ERROR} for one not in this list. */
    public static ExitCode of(int code) {
        for (ExitCode c : values()) {
            if (c.code == code) {
                return c;
            }
        }
        return ERROR;
    }

    /** For picocli's {@code exitCodeList}: right-aligned code → description. */
    static Map<String, String> helpList() {
        Map<String, String> m = new LinkedHashMap<>();
        for (ExitCode c : values()) {
            m.put(String.format("%3d", c.code), c.description);
        }
        return m;
    }
}
