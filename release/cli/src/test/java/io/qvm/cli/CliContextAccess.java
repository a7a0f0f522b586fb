package io.qvm.cli;

import java.nio.file.Path;

/** The CLI's image root for tests outside {@code io.qvm.cli}. */
public final class CliContextAccess {
    private CliContextAccess() {
    }

    public static Path imageRoot() {
        return CliContext.system().imageRoot(null);
    }
}
