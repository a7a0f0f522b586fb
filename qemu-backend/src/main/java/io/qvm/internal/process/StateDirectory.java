package io.qvm.internal.process;

import io.qvm.internal.host.Posix;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * qvm's per-user state: one directory per sandbox, so a later process can find and reap QEMUs
 * whose owner died.
 *
 * <pre>
 * $QVM_STATE (default ~/.local/state/qvm)/   mode 0700
 *   sandboxes/             mode 0700
 *     &lt;id&gt;/                 mode 0700, from its creation
 *       owner.json           see {@link OwnerRecord}; written atomically (temp file + rename)
 *       qemu.pid             QEMU's -pidfile
 *       qemu-stdout.log
 *       qemu-stderr.log
 *       console.log          the guest console (QEMU writes it)
 *       events.log           the guest init's events (QEMU writes them; only the init can)
 * </pre>
 *
 * Sockets do not live here (paths would be too long): see {@link SocketPaths}.
 *
 * <p>The root and {@code sandboxes/} are private directories ({@link PrivateDirectory}): created
 * 0700, or, if they exist, accepted only as real directories of this uid with mode 0700 — a
 * shared, foreign or symlinked one is refused, never chmod-ed. That is checked before anything in
 * them is read ({@link #list}, {@link #find}), since a reaper acts on what owner.json says: only
 * this user can have written it.
 *
 * <pre>{@code
 * StateDirectory states = StateDirectory.defaultLocation();
 * new StaleSandboxReaper(states, runtimeRoot, cgroups).reap(); // on backend start
 * String id = StateDirectory.newSandboxId();
 * SocketPaths sockets = SocketPaths.forSandbox(runtimeRoot, id).createDirectories();
 * SandboxState state = states.create(id, argv0, sockets);
 * }</pre>
 */
public final class StateDirectory {

    private static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,39}");
    private static final char[] ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567".toCharArray();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path root;

    private StateDirectory(Path root) {
        this.root = root.toAbsolutePath().normalize();
    }

    /** The state directory at {@code root} (created lazily). */
    public static StateDirectory at(Path root) {
        return new StateDirectory(root);
    }

    /** {@code $QVM_STATE}, or {@code ~/.local/state/qvm}. */
    public static StateDirectory defaultLocation() {
        return at(QvmEnvironment.system().stateRoot());
    }

    static Path defaultRoot(Map<String, String> env, String home) {
        return QvmEnvironment.of(env, home, "").stateRoot();
    }

    /** A fresh random sandbox id: 12 characters of lowercase base32 (60 bits). */
    public static String newSandboxId() {
        char[] c = new char[12];
        for (int i = 0; i < c.length; i++) {
            c[i] = ID_ALPHABET[RANDOM.nextInt(ID_ALPHABET.length)];
        }
        return new String(c);
    }

    /** Fails unless {@code id} is 1–40 of {@code [A-Za-z0-9_-]}, starting with a letter or digit. */
    public static String checkSandboxId(String id) {
        if (id == null || !ID.matcher(id).matches()) {
            throw new IllegalArgumentException("sandbox id must be 1-40 characters of [A-Za-z0-9_-] starting with a "
                    + "letter or digit (it becomes a directory name), got " + (id == null ? null : "'" + id + "'"));
        }
        return id;
    }

    public Path root() {
        return root;
    }

    public Path sandboxesDir() {
        return root.resolve("sandboxes");
    }

    /**
     * Creates {@code sandboxes/<id>/} and writes its owner.json for the current process.
     *
     * @param qemuBinary argv[0] of the QEMU command line
     * @param sockets the sandbox's socket paths (their directory is recorded for the reaper), or null
     * @throws java.nio.file.FileAlreadyExistsException if the sandbox already exists
     * @throws io.qvm.HostSetupException the root or {@code sandboxes/} exists but is not private
     */
    public SandboxState create(String id, String qemuBinary, SocketPaths sockets) throws IOException {
        checkSandboxId(id);
        Posix.privateDirectory(root, ELSEWHERE);
        Posix.privateDirectory(sandboxesDir(), ELSEWHERE);
        Path dir = PrivateDirectory.createNew(sandboxesDir().resolve(id));
        SandboxState state = new SandboxState(id, dir);
        state.write(OwnerRecord.forCurrentProcess(id, qemuBinary, sockets == null ? null : sockets.dir().toString()));
        return state;
    }

    /**
     * The sandbox {@code id}, if its directory exists.
     *
     * @throws io.qvm.HostSetupException the root or {@code sandboxes/} is not private ({@link #checkPrivate})
     * @throws java.io.UncheckedIOException they cannot be examined
     */
    public Optional<SandboxState> find(String id) {
        checkSandboxId(id);
        try {
            if (!checkPrivate()) {
                return Optional.empty();
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        Path dir = sandboxesDir().resolve(id);
        return Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS) ? Optional.of(new SandboxState(id, dir)) : Optional.empty();
    }

    /**
     * Every sandbox directory, sorted by id; entries that are not valid sandbox dirs are skipped.
     *
     * @throws io.qvm.HostSetupException the root or {@code sandboxes/} is not private ({@link #checkPrivate}):
     *     nothing in it was read
     */
    public List<SandboxState> list() throws IOException {
        List<SandboxState> out = new ArrayList<>();
        if (!checkPrivate()) {
            return out;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(sandboxesDir())) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                if (ID.matcher(name).matches() && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    out.add(new SandboxState(name, p));
                }
            }
        }
        out.sort(Comparator.comparing(SandboxState::id));
        return out;
    }

    /**
     * Checks, before anything in them is read, that the root and {@code sandboxes/} are private
     * directories of this uid ({@link PrivateDirectory}); creates nothing.
     *
     * @return false if either is missing (there is nothing to read), true if both are private
     * @throws io.qvm.HostSetupException ({@code HOST_SETUP_NEEDED}) one is a symlink, not a
     *     directory, another user's or not mode 0700 — the message names it and the fix
     */
    public boolean checkPrivate() throws IOException {
        try {
            return PrivateDirectory.verifyIfPresent(root) && PrivateDirectory.verifyIfPresent(sandboxesDir());
        } catch (UnsafeDirectoryException e) {
            throw Posix.unsafe(e, ELSEWHERE);
        }
    }

    /** How to give qvm another state directory, for the messages that refuse one. */
    static final String ELSEWHERE = "qvm keeps its sandboxes' state there; set " + QvmEnvironment.STATE
            + " (the CLI: --state-dir) to a directory of its own to use another";

    @Override
    public String toString() {
        return "StateDirectory[" + root + "]";
    }
}
