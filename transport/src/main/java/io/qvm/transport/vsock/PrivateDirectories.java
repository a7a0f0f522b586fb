package io.qvm.transport.vsock;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Creates, or accepts, a chain of private directories: each one created with mode 0700 (at
 * creation, not after), or, if it exists, a real directory (never a symlink) owned by this
 * process's uid with mode exactly 0700. Nothing is followed, chmod-ed or chown-ed: what is not
 * private is refused with the path, what was found and the fix.
 */
final class PrivateDirectories {

    private static final Set<PosixFilePermission> PRIVATE = PosixFilePermissions.fromString("rwx------");

    private PrivateDirectories() {
    }

    /**
     * Makes every directory from {@code top} down to {@code leaf} (both included) private. The
     * parent of {@code top} must exist; it is trusted as it is (e.g. {@code /tmp}, sticky).
     *
     * @throws FileSystemException a directory of the chain is a symlink, a file, someone else's
     *     or not mode 0700
     */
    static void ensure(Path top, Path leaf) throws IOException {
        if (!top.getFileSystem().supportedFileAttributeViews().contains("unix")) {
            Files.createDirectories(leaf);
            return;
        }
        Path p = top;
        ensureOne(p);
        for (Path name : top.relativize(leaf)) {
            if (name.toString().isEmpty()) {
                continue;
            }
            p = p.resolve(name);
            ensureOne(p);
        }
    }

    private static void ensureOne(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PRIVATE));
            } catch (FileAlreadyExistsException raced) {
                // created meanwhile (by us or by someone else): checked below
            }
        }
        String fix = "; qvm uses only a private directory of its own there — remove it (qvm recreates it) or set "
                + "XDG_RUNTIME_DIR";
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            throw new FileSystemException(dir.toString(), null, "is a symlink or a file, not a private directory" + fix);
        }
        int owner = (Integer) Files.getAttribute(dir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        int me = currentUid(dir);
        if (owner != me) {
            throw new FileSystemException(dir.toString(), null, "is owned by uid " + owner + ", not by this process "
                    + "(uid " + me + ")" + fix);
        }
        Set<PosixFilePermission> mode = Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
        if (!mode.equals(PRIVATE)) {
            throw new FileSystemException(dir.toString(), null, "has mode " + PosixFilePermissions.toString(mode)
                    + ", not rwx------" + fix);
        }
    }

    /** The uid of this process: the owner of {@code /proc/self}, else of a file created in {@code near}. */
    private static int currentUid(Path near) throws IOException {
        Path self = Path.of("/proc/self");
        if (Files.isDirectory(self)) {
            return (Integer) Files.getAttribute(self, "unix:uid");
        }
        Path probe = Files.createTempFile(near, ".uid", ".probe");
        try {
            return (Integer) Files.getAttribute(probe, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        } finally {
            Files.deleteIfExists(probe);
        }
    }
}
