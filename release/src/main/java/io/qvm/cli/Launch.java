package io.qvm.cli;

import io.qvm.protocol.util.PrivateDirectory;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Where a detached {@code qvm up} and its supervisor meet before the sandbox has an id (the
 * backend chooses the id when the sandbox starts):
 *
 * <pre>
 * $QVM_STATE/                       mode 0700 (a private directory, as for the backend)
 *   launch/                          mode 0700
 *     &lt;handle&gt;/                     mode 0700, made by the parent
 *       supervisor.log   the supervisor's stdout+stderr, capped at 1 MiB with one older
 *                        supervisor.log.1 ({@link RotatingLog}); moved into the session's state
 *                        directory once it is up (the open file keeps being written)
 *       ready.json       a copy of the sandbox's ready.json: the parent's signal
 *       failed.json      {"exitCode", "code", "message"} when the supervisor failed before ready
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

    /**
     * Creates {@code launch/<handle>/}: the state root and {@code launch/} private directories
     * ({@link PrivateDirectory}: created 0700, an existing one refused unless it is ours and 0700),
     * the handle's directory new and 0700 from its creation.
     *
     * @throws io.qvm.protocol.util.UnsafeDirectoryException the state root or {@code launch/} is
     *     shared, another user's or a symlink (the message names it and the fix)
     */
    static Path create(Path stateRoot, String handle) throws IOException {
        PrivateDirectory.ensure(stateRoot);
        PrivateDirectory.ensure(stateRoot.resolve("launch"));
        return PrivateDirectory.createNew(dir(stateRoot, handle));
    }

}
