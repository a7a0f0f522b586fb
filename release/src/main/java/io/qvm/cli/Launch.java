package io.qvm.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Where a detached {@code qvm up} and its supervisor meet before the sandbox has an id (the
 * backend chooses the id when the sandbox starts):
 *
 * <pre>
 * $QVM_STATE/launch/&lt;handle&gt;/     mode 0700, made by the parent
 *   supervisor.log     the supervisor's stdout+stderr, capped at 1 MiB with one older
 *                      supervisor.log.1 ({@link RotatingLog}); moved into the session's state
 *                      directory once it is up (the open file keeps being written)
 *   ready.json         a copy of the sandbox's ready.json: the parent's signal
 *   failed.json        {"exitCode", "code", "message"} when the supervisor failed before ready
 * </pre>
 *
 * The parent removes the directory once it has read ready.json or failed.json; a supervisor that
 * got ready removes it too when it exits (the parent may have died meanwhile).
 */
final class Launch {

    static final String LOG = "supervisor.log";
    static final String FAILED = "failed.json";

    private Launch() {
    }

    static Path dir(Path stateRoot, String handle) {
        return stateRoot.resolve("launch").resolve(handle);
    }

    static Path create(Path stateRoot, String handle) throws IOException {
        Path parent = stateRoot.resolve("launch");
        Files.createDirectories(parent);
        Path dir = dir(stateRoot, handle);
        if (parent.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } else {
            Files.createDirectory(dir);
        }
        return dir;
    }

}
