package io.qvm.internal.process;

import io.qvm.internal.host.Posix;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * Where a sandbox's AF_UNIX sockets live. {@code sun_path} holds 108 bytes on Linux and 104 on
 * macOS and the BSDs (including the terminating NUL), and state directories under a home
 * directory easily exceed that, so sockets go into a short runtime directory instead:
 *
 * <pre>
 * $QVM_RUNTIME_DIR/&lt;id&gt;/            if set
 * $XDG_RUNTIME_DIR/qvm/&lt;id&gt;/        Linux desktops and systemd sessions (/run/user/&lt;uid&gt;, mode 0700)
 * %TEMP%\qvm\&lt;id&gt;\                  Windows
 * /tmp/qvm-&lt;uid&gt;/&lt;id&gt;/            otherwise (created 0700, must be ours and not a symlink)
 *     qmp.sock      QMP
 *     worker.sock   the worker's virtio-serial chardev
 * </pre>
 *
 * Every path is checked to be at most {@link #MAX_SOCKET_PATH_BYTES} bytes (UTF-8), which fits
 * every OS qvm supports.
 *
 * @param dir the sandbox's runtime directory
 * @param qmp the QMP socket
 * @param worker the worker transport socket
 */
public record SocketPaths(Path dir, Path qmp, Path worker) {

    /** 104 bytes of macOS's {@code sun_path} minus the NUL. */
    public static final int MAX_SOCKET_PATH_BYTES = 103;

    public SocketPaths {
        Objects.requireNonNull(dir, "dir");
        checkLength(qmp);
        checkLength(worker);
        checkLength(dir.resolve(CONTROL));
        checkLength(dir.resolve(MIGRATION));
    }

    private static final String CONTROL = "control.sock";
    private static final String MIGRATION = "migrate.sock";

    /** The guest init's control port (clock, reseed check; CONTRACTS.md). */
    public Path control() {
        return dir.resolve(CONTROL);
    }

    /**
     * Where a template's QEMU hands the host its migration stream, when QEMU runs as this
     * process's user (a QEMU that dropped from root cannot enter this directory: it gets a
     * hand-over socket elsewhere, {@code MigrationSocket}; a clone reads its stream from stdin).
     */
    public Path migration() {
        return dir.resolve(MIGRATION);
    }

    /** The socket paths of sandbox {@code id} under the {@link #defaultRuntimeRoot()}. */
    public static SocketPaths forSandbox(String id) {
        return forSandbox(defaultRuntimeRoot(), id);
    }

    /**
     * The socket paths of sandbox {@code id} under {@code runtimeRoot}.
     *
     * @throws IllegalArgumentException if a path would be too long, saying which and what to do
     */
    public static SocketPaths forSandbox(Path runtimeRoot, String id) {
        Path dir = dirOf(runtimeRoot, id);
        return new SocketPaths(dir, dir.resolve("qmp.sock"), dir.resolve("worker.sock"));
    }

    /**
     * The runtime directory of sandbox {@code id} under {@code runtimeRoot}: {@code <root>/<id>},
     * the only directory a reaper may delete for it ({@link StaleSandboxReaper}).
     */
    public static Path dirOf(Path runtimeRoot, String id) {
        StateDirectory.checkSandboxId(id);
        return runtimeRoot.toAbsolutePath().normalize().resolve(id);
    }

    /** Fails if {@code socket} is too long to bind or connect on some supported OS. */
    public static void checkLength(Path socket) {
        int bytes = socket.toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_SOCKET_PATH_BYTES) {
            throw new IllegalArgumentException("socket path " + socket + " is " + bytes
                    + " bytes; AF_UNIX allows at most " + MAX_SOCKET_PATH_BYTES + " on every OS qvm supports. "
                    + "Set QVM_RUNTIME_DIR (or XDG_RUNTIME_DIR) to a shorter directory, e.g. /tmp/qvm");
        }
    }

    /**
     * Creates {@link #dir()} (and the runtime root if missing) with mode 0700 where POSIX
     * permissions exist; an existing one must already be private
     * ({@link io.qvm.protocol.util.PrivateDirectory}: refused, never chmod-ed).
     *
     * @throws HostSetupException ({@link HostSetupException.Problem#HOST_SETUP_NEEDED}) when an
     *     existing directory is not a private one of ours, naming what was found and the fix
     */
    public SocketPaths createDirectories() throws IOException {
        Posix.privateDirectory(dir.getParent(), ELSEWHERE);
        Posix.privateDirectory(dir, ELSEWHERE);
        return this;
    }

    /** How to give qvm another runtime root, for the messages that refuse one. */
    static final String ELSEWHERE = "qvm keeps sockets there; set " + QvmEnvironment.RUNTIME_DIR
            + " to a directory of its own to use another";

    /** Deletes the runtime directory and the sockets in it (nothing else is expected there). */
    public void deleteDirectory() throws IOException {
        FileTrees.delete(dir);
    }

    /** The runtime root, from the environment; see the class comment. */
    public static Path defaultRuntimeRoot() {
        return QvmEnvironment.system().runtimeRoot();
    }

    static Path defaultRuntimeRoot(Map<String, String> env, String osName) {
        return QvmEnvironment.of(env, System.getProperty("user.home"), osName).runtimeRoot();
    }
}
