package io.qvm.image;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.apache.commons.compress.archivers.ar.ArArchiveEntry;
import org.apache.commons.compress.archivers.ar.ArArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.compressors.bzip2.BZip2CompressorInputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;
import org.apache.commons.compress.compressors.xz.XZCompressorInputStream;

/**
 * {@code dpkg-deb -x} in pure Java: extracts a Debian binary package's {@code data.tar*} into a
 * directory, with what the image build relies on kept exactly as dpkg-deb keeps it: file
 * contents, permission bits (setuid/setgid/sticky included where the file system has a "unix"
 * view), modification times, directories, symbolic links (their targets verbatim, absolute ones
 * included: readers interpret them relative to the package root, see SharedLibraryClosure) and
 * hard links. Directory modification times are set from the archive too but are not part of
 * the contract (GNU tar under dpkg-deb leaves some at extraction time, and the initramfs
 * writer stores a fixed mtime for everything). Ownership is not set (the build runs unprivileged on most hosts; the initramfs
 * writer stores uid/gid 0 for everything).
 *
 * <pre>
 *   package.deb = ar archive ("!&lt;arch&gt;\n")
 *     debian-binary      "2.0\n"
 *     control.tar.{xz,gz,zst,}   ignored
 *     data.tar.{xz,gz,bz2,}      extracted        data.tar.zst: UnsupportedPackageException
 * </pre>
 *
 * <p>The archive is treated as hostile even after its hash matched: an absolute member name, a
 * {@code ..} component, a relative symlink that climbs above the root, a hard link to something
 * that is not a regular file extracted before it, a member written through a symlink, a device
 * node or a FIFO is an {@link UnsafePackageException} and nothing is kept (the caller extracts
 * into a temporary directory and deletes it on failure).
 *
 * <p>Needs a file system with POSIX permissions (Linux, macOS). On a Windows file system the
 * modes and links the image needs cannot be represented, so it refuses with a message saying so
 * (untested on a real Windows host).
 */
public final class DebArchive {
    private static final Set<String> SUPPORTED_FORMATS = Set.of("2.0");

    private DebArchive() {
    }

    /**
     * Extracts {@code deb}'s data archive into {@code into}, an existing empty directory.
     *
     * @param label the package, for messages ({@code name version (arch)})
     * @throws UnsafePackageException the archive would write outside {@code into}
     * @throws UnsupportedPackageException not a .deb this extractor reads (e.g. zstd)
     */
    public static void extract(Path deb, Path into, String label) {
        try {
            if (!Files.getFileStore(into).supportsFileAttributeView(PosixFileAttributeView.class)) {
                throw new ImageException("cannot extract " + label + " into " + into + ": its file "
                        + "system has no POSIX permissions or symbolic links, which the guest image "
                        + "needs. Put the cache (QVM_CACHE) on a POSIX file system (on Windows: "
                        + "inside WSL; untested on a real Windows host)");
            }
            try (InputStream file = new BufferedInputStream(Files.newInputStream(deb));
                    ArArchiveInputStream ar = new ArArchiveInputStream(file)) {
                boolean sawFormat = false;
                ArArchiveEntry m;
                while ((m = ar.getNextEntry()) != null) {
                    String name = m.getName();
                    if (name.equals("debian-binary")) {
                        String v = new String(ar.readNBytes(16), StandardCharsets.US_ASCII).trim();
                        if (!SUPPORTED_FORMATS.contains(v)) {
                            throw new UnsupportedPackageException(label + " (" + deb + ") has package "
                                    + "format '" + v + "', this extractor reads format 2.0 only");
                        }
                        sawFormat = true;
                    } else if (name.startsWith("data.tar")) {
                        if (!sawFormat) {
                            throw new UnsupportedPackageException(label + " (" + deb + ") is not a "
                                    + "Debian package: no debian-binary member before " + name);
                        }
                        try (InputStream data = decompressor(name, unclosable(ar), label);
                                TarArchiveInputStream tar = new TarArchiveInputStream(data)) {
                            new Extraction(into, label).run(tar);
                        }
                        return;
                    }
                }
                throw new UnsupportedPackageException(label + " (" + deb + ") is not a Debian package: "
                        + (sawFormat ? "no data.tar member" : "no debian-binary member"));
            }
        } catch (IOException e) {
            throw new ImageException("cannot extract " + label + " from " + deb + ": " + e, e);
        }
    }

    private static InputStream decompressor(String member, InputStream in, String label)
            throws IOException {
        return switch (member) {
            case "data.tar" -> in;
            case "data.tar.xz" -> new XZCompressorInputStream(in);
            case "data.tar.gz" -> new GzipCompressorInputStream(in);
            case "data.tar.bz2" -> new BZip2CompressorInputStream(in);
            case "data.tar.zst" -> throw new UnsupportedPackageException(label + " stores its files "
                    + "as data.tar.zst: zstd needs a native library, which the image build does not "
                    + "load. Pin a build of " + label.split(" ")[0] + " compressed with xz (every "
                    + "package of Debian bookworm is)");
            default -> throw new UnsupportedPackageException(label + " has a data member '" + member
                    + "' in a format this extractor does not read (xz, gz, bz2 or none)");
        };
    }

    /**
     * A member name as a relative path with '/' separators and no '.', '..' or empty
     * components; "" for the root ("./").
     */
    static String normalize(String label, String raw) {
        if (raw.startsWith("/")) {
            throw new UnsafePackageException(label, raw, "has an absolute name");
        }
        if (raw.indexOf('\0') >= 0 || raw.indexOf('\\') >= 0) {
            throw new UnsafePackageException(label, raw, "has a NUL or backslash in its name");
        }
        List<String> parts = new ArrayList<>();
        for (String p : raw.split("/")) {
            if (p.isEmpty() || p.equals(".")) {
                continue;
            }
            if (p.equals("..")) {
                throw new UnsafePackageException(label, raw, "has a '..' component");
            }
            parts.add(p);
        }
        return String.join("/", parts);
    }

    /** True if a relative symlink at {@code linkRel} with {@code target} stays under the root. */
    static boolean staysInside(String linkRel, String target) {
        if (target.startsWith("/")) {
            return true; // absolute: relative to the package root by every reader of the tree
        }
        Deque<String> dir = new ArrayDeque<>();
        String[] own = linkRel.split("/");
        for (int i = 0; i < own.length - 1; i++) {
            dir.addLast(own[i]);
        }
        for (String p : target.split("/")) {
            if (p.isEmpty() || p.equals(".")) {
                continue;
            }
            if (p.equals("..")) {
                if (dir.isEmpty()) {
                    return false;
                }
                dir.removeLast();
            } else {
                dir.addLast(p);
            }
        }
        return true;
    }

    /** One extraction: directories' modes and times are applied last, deepest first. */
    private static final class Extraction {
        private final Path root;
        private final String label;
        private final boolean unixView;
        private final List<Object[]> dirs = new ArrayList<>();

        Extraction(Path root, String label) throws IOException {
            this.root = root;
            this.label = label;
            this.unixView = Files.getFileStore(root).supportsFileAttributeView("unix");
        }

        void run(TarArchiveInputStream tar) throws IOException {
            TarArchiveEntry e;
            while ((e = tar.getNextEntry()) != null) {
                String raw = e.getName();
                String rel = normalize(label, raw);
                FileTime mtime = e.getLastModifiedTime();
                int mode = e.getMode() & 07777;
                if (e.isDirectory()) {
                    Path dir = rel.isEmpty() ? root : prepare(rel, raw, true);
                    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                        Files.createDirectory(dir);
                    }
                    dirs.add(new Object[] {dir, mode, mtime});
                } else if (e.isSymbolicLink()) {
                    String target = e.getLinkName();
                    if (target.isEmpty() || target.indexOf('\0') >= 0) {
                        throw new UnsafePackageException(label, raw, "is a symlink with an empty target");
                    }
                    if (!staysInside(rel, target)) {
                        throw new UnsafePackageException(label, raw, "is a symlink to '" + target
                                + "', which leaves the package root");
                    }
                    Path link = prepare(rel, raw, false);
                    Files.createSymbolicLink(link, link.getFileSystem().getPath(target));
                    Files.getFileAttributeView(link, BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                            .setTimes(mtime, null, null);
                } else if (e.isLink()) {
                    String targetRel = normalize(label, e.getLinkName());
                    if (targetRel.isEmpty()) {
                        throw new UnsafePackageException(label, raw, "is a hard link to the root");
                    }
                    Path target = inside(targetRel, e.getLinkName());
                    if (!Files.isRegularFile(target, LinkOption.NOFOLLOW_LINKS)) {
                        throw new UnsafePackageException(label, raw, "is a hard link to '" + e.getLinkName()
                                + "', which is not a regular file extracted before it");
                    }
                    Path link = prepare(rel, raw, false);
                    Files.createLink(link, target);
                } else if (regular(e)) {
                    if (rel.isEmpty()) {
                        throw new UnsafePackageException(label, raw, "is a file at the root");
                    }
                    Path file = prepare(rel, raw, false);
                    Files.copy(tar, file);
                    setMode(file, mode);
                    Files.setLastModifiedTime(file, mtime);
                } else {
                    throw new UnsafePackageException(label, raw, "is a device node, FIFO or other "
                            + "special file (tar type '" + (char) typeFlag(e) + "'); the image needs none");
                }
            }
            for (int i = dirs.size() - 1; i >= 0; i--) {
                Object[] d = dirs.get(i);
                setMode((Path) d[0], (Integer) d[1]);
                Files.setLastModifiedTime((Path) d[0], (FileTime) d[2]);
            }
        }

        private static byte typeFlag(TarArchiveEntry e) {
            return e.getLinkFlag();
        }

        /** A plain file by its type flag ('0', NUL or '7'); not a device, FIFO or sparse file. */
        private static boolean regular(TarArchiveEntry e) {
            byte f = e.getLinkFlag();
            return (f == TarConstants.LF_NORMAL || f == TarConstants.LF_OLDNORM || f == TarConstants.LF_CONTIG)
                    && !e.isGNUSparse() && !e.getName().endsWith("/");
        }

        /**
         * The path of an existing entry {@code rel}, refusing one reached through a symlink.
         */
        private Path inside(String rel, String raw) {
            Path p = root;
            for (String part : rel.split("/")) {
                p = p.resolve(part);
                if (Files.isSymbolicLink(p)) {
                    throw new UnsafePackageException(label, raw, "goes through the symlink "
                            + root.relativize(p));
                }
            }
            return p;
        }

        /**
         * Creates the missing parents of {@code rel} (none of them may be a symlink or a
         * non-directory) and clears a previous non-directory entry of the same name, as tar does.
         */
        private Path prepare(String rel, String raw, boolean directory) throws IOException {
            String[] parts = rel.split("/");
            Path p = root;
            for (int i = 0; i < parts.length - 1; i++) {
                p = p.resolve(parts[i]);
                if (Files.isSymbolicLink(p)) {
                    throw new UnsafePackageException(label, raw, "is written through the symlink "
                            + root.relativize(p));
                }
                if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectory(p);
                } else if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    throw new UnsafePackageException(label, raw, "needs " + root.relativize(p)
                            + " to be a directory, but an earlier entry made it a file");
                }
            }
            Path target = p.resolve(parts[parts.length - 1]);
            if (Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                if (!directory) {
                    throw new UnsafePackageException(label, raw, "would replace a directory");
                }
            } else if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                if (directory) {
                    throw new UnsafePackageException(label, raw, "is a directory replacing a file or link");
                }
                Files.delete(target); // a later member of the same name wins, as in tar
            }
            return target;
        }

        private void setMode(Path p, int mode) throws IOException {
            if (unixView) {
                Files.setAttribute(p, "unix:mode", mode, LinkOption.NOFOLLOW_LINKS);
                return;
            }
            Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
            PosixFilePermission[] order = {
                PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
                PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
                PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
                PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
                PosixFilePermission.OWNER_READ};
            for (int bit = 0; bit < order.length; bit++) {
                if ((mode & (1 << bit)) != 0) {
                    perms.add(order[bit]);
                }
            }
            Files.setPosixFilePermissions(p, perms);
        }
    }

    /** The ar member's stream, which the tar reader must not close. */
    private static InputStream unclosable(InputStream in) {
        return new java.io.FilterInputStream(in) {
            @Override
            public void close() {
            }
        };
    }
}
