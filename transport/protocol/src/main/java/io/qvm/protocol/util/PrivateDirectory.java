package io.qvm.protocol.util;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.AclEntry;
import java.nio.file.attribute.AclEntryFlag;
import java.nio.file.attribute.AclEntryPermission;
import java.nio.file.attribute.AclEntryType;
import java.nio.file.attribute.AclFileAttributeView;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileOwnerAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.util.EnumSet;
import java.util.List;
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
 * <p>On a file system without POSIX owners and modes but with owners and ACLs (Windows: NTFS, the
 * {@code owner} and {@code acl} attribute views) "private" means: a real directory (not a symlink
 * or junction), owned ({@link FileOwnerAttributeView}) by the current user (the principal of
 * {@code user.name}), whose ACL ({@link AclFileAttributeView}) has ALLOW entries for that owner
 * only — DENY entries take nothing away from privacy and are accepted; an ALLOW entry for anyone
 * else (Everyone, Users, SYSTEM, Administrators, an inherited entry) is refused, never removed. A
 * missing directory is created with exactly that ACL — the owner, full control, inherited by what
 * is created in it — as a creation attribute where the provider takes one (Windows does) and set
 * again right after (an explicit ACL carries no entries inherited from the parent). On a file system with neither view a directory is only
 * checked to be a real directory. The ACL rules are untested on a real Windows host (they are
 * tested on Jimfs in Windows mode).
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
            verifyOwnerAndAcl(dir); // Windows-shaped (see the class comment)
            return;
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
        } else if (acls(dir)) {
            List<AclEntry> acl = List.of(ownerOnly(currentUser(dir)));
            try {
                Files.createDirectory(dir, aclAttribute(acl));
            } catch (UnsupportedOperationException noAclAtCreation) {
                Files.createDirectory(dir); // this provider cannot (Jimfs); the ACL is set below
            }
            // again, explicitly: where the OS merged entries inherited from the parent into the
            // created directory's ACL, setting it replaces them with exactly this one
            Files.getFileAttributeView(dir, AclFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).setAcl(acl);
        } else {
            Files.createDirectory(dir);
        }
    }

    /** Whether {@code anyPath}'s file system has owners and ACLs (Windows' NTFS; not POSIX). */
    static boolean acls(Path anyPath) {
        Set<String> views = anyPath.getFileSystem().supportedFileAttributeViews();
        return views.contains("acl") && views.contains("owner");
    }

    /**
     * The current user as a principal of {@code anyPath}'s file system: the one named by the
     * {@code user.name} system property (on Windows that resolves to the account's SID).
     */
    static UserPrincipal currentUser(Path anyPath) throws IOException {
        String name = System.getProperty("user.name", "");
        try {
            return anyPath.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(name);
        } catch (UserPrincipalNotFoundException | UnsupportedOperationException e) {
            throw new IOException("cannot look up the current user '" + name + "' on " + anyPath.getFileSystem()
                    + ": " + e, e);
        }
    }

    /** The one ACL entry of a private directory: its owner, full control, inherited by what is created in it. */
    private static AclEntry ownerOnly(UserPrincipal owner) {
        return AclEntry.newBuilder().setType(AclEntryType.ALLOW).setPrincipal(owner)
                .setPermissions(EnumSet.allOf(AclEntryPermission.class))
                .setFlags(AclEntryFlag.FILE_INHERIT, AclEntryFlag.DIRECTORY_INHERIT).build();
    }

    private static FileAttribute<List<AclEntry>> aclAttribute(List<AclEntry> acl) {
        return new FileAttribute<>() {
            @Override
            public String name() {
                return "acl:acl";
            }

            @Override
            public List<AclEntry> value() {
                return acl;
            }
        };
    }

    /** The owner-and-ACL check of a file system without POSIX modes (see the class comment). */
    private static void verifyOwnerAndAcl(Path dir) throws IOException {
        Set<String> views = dir.getFileSystem().supportedFileAttributeViews();
        if (!views.contains("owner")) {
            return; // nothing more can be checked here (see the class comment)
        }
        UserPrincipal owner = Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS);
        UserPrincipal me = currentUser(dir);
        if (!owner.equals(me)) {
            throw new UnsafeDirectoryException(dir, UnsafeDirectoryException.Problem.FOREIGN_OWNER, dir
                    + " is owned by " + owner.getName() + ", not by this process's user (" + me.getName()
                    + "): another user may have planted it, and qvm trusts nothing in it. Choose another directory "
                    + "(qvm creates a missing one that only you can use), or remove this one if you know it is stale");
        }
        if (!views.contains("acl")) {
            return;
        }
        List<AclEntry> acl = Files.getFileAttributeView(dir, AclFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                .getAcl();
        List<String> others = acl.stream()
                .filter(e -> e.type() == AclEntryType.ALLOW && !e.principal().equals(owner))
                .map(e -> e.principal().getName()).distinct().toList();
        if (!others.isEmpty()) {
            throw new UnsafeDirectoryException(dir, UnsafeDirectoryException.Problem.SHARED_MODE, dir
                    + "'s ACL grants access to " + String.join(", ", others) + ", not only to its owner "
                    + owner.getName() + ": they can reach what qvm keeps there. qvm never changes an existing "
                    + "directory's ACL: run 'icacls \"" + dir + "\" /inheritance:r /grant:r \"" + owner.getName()
                    + ":(OI)(CI)F\"' and remove the other grants ('icacls \"" + dir + "\" /remove <name>') if the "
                    + "directory is qvm's alone, or choose another directory");
        }
    }
}
