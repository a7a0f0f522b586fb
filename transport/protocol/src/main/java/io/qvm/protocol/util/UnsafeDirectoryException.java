package io.qvm.protocol.util;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;

/**
 * A directory qvm was to create or trust is not a private directory of this process's user, and
 * qvm will not repair it ({@link PrivateDirectory}). The message names the directory, what was
 * found and the fix; {@link #problem()} says which check failed.
 */
public final class UnsafeDirectoryException extends IOException {
    private static final long serialVersionUID = 1L;

    /** Which check the directory failed. */
    public enum Problem {
        /** A symbolic link (qvm never follows one to a directory it trusts). */
        SYMLINK,
        /** A file or something else that is not a directory. */
        NOT_A_DIRECTORY,
        /** Owned by another uid: possibly planted by another user. */
        FOREIGN_OWNER,
        /** Ours, but with group or other permission bits (not exactly 0700). */
        SHARED_MODE
    }

    private final transient Path directory;
    private final Problem problem;

    UnsafeDirectoryException(Path directory, Problem problem, String message) {
        super(message);
        this.directory = Objects.requireNonNull(directory, "directory");
        this.problem = Objects.requireNonNull(problem, "problem");
    }

    /** The directory that was refused. */
    public Path directory() {
        return directory;
    }

    /** Which check it failed. */
    public Problem problem() {
        return problem;
    }
}
