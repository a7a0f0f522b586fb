package io.qvm.protocol.util;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The one rule for every directory qvm creates or trusts as a root (the state directory and its
 * {@code sandboxes/}, the socket runtime root, the template store, the CLI's {@code launch/}, the
 * unpacked Maven images, the vsock CID locks):
 *
 * <ul>
 *   <li>a missing directory is created with mode 0700 from its first instant (the mode is a
 *       creation attribute, not a chmod afterwards); missing parents are created as usual;
 *   <li>an existing one is accepted only if it is a real directory (a symlink is refused, never
 *       followed), owned by this process's uid, with mode exactly 0700 (no group or other bit);
 *   <li>anything else is refused with an {@link UnsafeDirectoryException} that names the
 *       directory, what was found and the fix. Nothing is ever chmod-ed or chown-ed: a chmod
 *       would take a shared directory from everyone else ({@code QVM_RUNTIME_DIR=/tmp} as root
 *       would make {@code /tmp} 0700), and a directory of another owner may be a squatter's.
 * </ul>
 *
 * Only the directory itself is checked, not its parents: a parent is trusted as it is (a home
 * directory, or {@code /tmp} with its sticky bit, where nobody else can rename or replace our
 * entry). Once a directory passed, only this uid (and root) can change what is in it, so what qvm
 * reads there afterwards was written by this user.
 *
 * <p>On a file system without POSIX owners and modes (Windows: NTFS with ACLs) a missing
 * directory is created normally and an existing one is only checked to be a real directory, not a
 * symlink; its owner and ACL are <em>not</em> checked there (and this has not been tried on a real
 * Windows host).
 *
 * <pre>{@code
 * Path root = PrivateDirectory.ensure(stateRoot);          // created 0700, or ours and 0700 already
 * if (PrivateDirectory.verifyIfPresent(root)) { ... }      // read only what a private root holds
 * Path fresh = PrivateDirectory.createNew(root.resolve(id)); // a new 0700 directory, never an old one
 * }</pre>
 */
public final class PrivateDirectory {

    private static final Set<PosixFilePermission> PRIVATE = PosixFilePermissions.fromString("rwx------");
    private static volatile Integer uid;

    private PrivateDirectory() {
    }

    /**
     * Creates {@code dir} with mode 0700 if it is missing (its missing parents as usual), then
     * checks it; an existing directory is only checked.
     *
     * @return {@code dir}
     * @throws UnsafeDirectoryException {@code dir} exists and is not a private directory of ours
     */
    public static Path ensure(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            Path parent = dir.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            try {
                create(dir);
            } catch (FileAlreadyExistsException raced) {
                // someone created it meanwhile: checked below like any existing directory
            }
        }
        verify(dir);
        return dir;
    }

    /**
     * Creates the new directory {@code dir} with mode 0700 (its parent must exist); an existing
     * one, even a private one, is an error: for a directory that must be this process's alone
     * (a sandbox's, a launch's).
     *
     * @return {@code dir}
     * @throws FileAlreadyExistsException something is already there
     */
    public static Path createNew(Path dir) throws IOException {
        create(dir);
        return dir;
    }

    /**
     * Whether {@code dir} exists, after checking it: false if it is missing, true if it is a
     * private directory of ours. For a root that is read but not created (what a reaper walks).
     *
     * @throws UnsafeDirectoryException {@code dir} exists and is not a private directory of ours
     */
    public static boolean verifyIfPresent(Path dir) throws IOException {
        try {
            verify(dir);
            return true;
        } catch (NoSuchFileException missing) {
            return false;
        }
    }

    /**
     * Checks that {@code dir} is a real directory (not a symlink), owned by this uid, mode 0700.
     *
     * @throws NoSuchFileException it is missing
     * @throws UnsafeDirectoryException it is anything else
     */
    public static void verify(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new NoSuchFileException(dir.toString(), null, "no such directory");
        }
        if (Files.isSymbolicLink(dir)) {
            String target;
            try {
                target = Files.readSymbolicLink(dir).toString();
            } catch (IOException e) {
                target = "?";
            }
            throw new UnsafeDirectoryException(dir, UnsafeDirectoryException.Problem.SYMLINK, dir
                    + " is a symlink (to " + target + "), not a private directory: qvm never follows a link to a "
                    + "directory it trusts, since another user may have planted it. Use a real directory of your own "
                    + "instead (qvm creates a missing one with mode 700), e.g. the link's target if it is yours and "
                    + "has mode 700, or choose another directory");
        }
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new UnsafeDirectoryException(dir, UnsafeDirectoryException.Problem.NOT_A_DIRECTORY, dir
                    + " is not a directory: remove it (qvm then creates a private directory there) or choose another "
                    + "directory");
        }
        if (!ownersAndModes(dir)) {
            return; // no POSIX owner or mode to check here (see the class comment)
        }
        int owner = (Integer) Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        int me = currentUid();
        if (owner != me) {
            throw new UnsafeDirectoryException(dir, UnsafeDirectoryException.Problem.FOREIGN_OWNER, dir
                    + " is owned by uid " + owner + ", not by this process (uid " + me + "): another user may have "
                    + "planted it, and qvm trusts nothing in it. Choose another directory (qvm creates a missing one "
                    + "with mode 700), or remove this one if you know it is stale");
        }
        Set<PosixFilePermission> mode = Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
        if (!mode.equals(PRIVATE)) {
            throw new UnsafeDirectoryException(dir, UnsafeDirectoryException.Problem.SHARED_MODE, dir
                    + " has mode " + PosixFilePermissions.toString(mode) + ", not rwx------ (700): other users can "
                    + "reach what qvm keeps there. qvm never changes an existing directory's mode: run 'chmod 700 "
                    + dir + "' if the directory is qvm's alone, or choose another directory");
        }
    }

    /**
     * {@link #ensure}s every directory from {@code top} down to {@code leaf}, both included
     * ({@code leaf} must be {@code top} or below it).
     */
    public static Path ensureChain(Path top, Path leaf) throws IOException {
        Path t = top.toAbsolutePath().normalize();
        Path l = leaf.toAbsolutePath().normalize();
        if (!l.startsWith(t)) {
            throw new IllegalArgumentException(leaf + " is not under " + top);
        }
        Path p = ensure(t);
        for (Path name : t.relativize(l)) {
            if (!name.toString().isEmpty()) {
                p = ensure(p.resolve(name));
            }
        }
        return leaf;
    }

    /** Whether {@code anyPath}'s file system has POSIX owners and modes (false on Windows). */
    public static boolean ownersAndModes(Path anyPath) {
        Set<String> views = anyPath.getFileSystem().supportedFileAttributeViews();
        return views.contains("unix") && views.contains("posix");
    }

    /**
     * The uid of this process: the owner of {@code /proc/self} on Linux, else the owner of a file
     * it creates (in {@code java.io.tmpdir}).
     */
    public static int currentUid() {
        Integer u = uid;
        if (u != null) {
            return u;
        }
        try {
            Path self = Path.of("/proc/self");
            if (Files.isDirectory(self)) {
                u = (Integer) Files.getAttribute(self, "unix:uid");
            } else {
                Path probe = Files.createTempFile("qvm-uid", ".probe");
                try {
                    u = (Integer) Files.getAttribute(probe, "unix:uid", LinkOption.NOFOLLOW_LINKS);
                } finally {
                    Files.deleteIfExists(probe);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot determine the current uid", e);
        }
        uid = u;
        return u;
    }

    private static void create(Path dir) throws IOException {
        if (ownersAndModes(dir)) {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PRIVATE));
        } else {
            Files.createDirectory(dir);
        }
    }
}
