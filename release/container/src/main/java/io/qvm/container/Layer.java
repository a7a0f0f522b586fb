package io.qvm.container;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * One image layer as a file-system tree in memory (paths, modes, owners, link targets; file
 * contents stay where they are on disk), written as a POSIX tar whose bytes depend on nothing but
 * that tree: entries sorted by path, every parent directory present, one fixed mtime, numeric
 * owners only (no user or group names), no device numbers.
 * <pre>
 *   etc/                    0755 0:0
 *   etc/passwd              0644 0:0       regular file, contents from a Path or bytes
 *   lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2   symlink
 *   var/lib/qvm/            0755 10001:10001
 * </pre>
 * What it refuses to carry is named, not silently changed: {@link #addTree} skips a setuid or
 * setgid file, a device node, FIFO or socket and records it in {@link #skipped()}; the same path
 * from two trees is accepted only if both agree (same directory, same link target, same bytes),
 * else it is an {@link IllegalStateException} naming both sources.
 */
public final class Layer {
    /** The entry kinds a layer holds. */
    enum Kind { DIR, FILE, SYMLINK }

    /** One path of the layer. {@code source} is where it came from, for messages. */
    record Node(String path, Kind kind, int mode, int uid, int gid, Path file, byte[] bytes, String linkTarget,
            String source) {
        long size() throws IOException {
            return kind != Kind.FILE ? 0 : bytes != null ? bytes.length : Files.size(file);
        }

        InputStream open() throws IOException {
            return bytes != null ? new java.io.ByteArrayInputStream(bytes) : Files.newInputStream(file);
        }
    }

    private final TreeMap<String, Node> nodes = new TreeMap<>();
    private final List<String> skipped = new ArrayList<>();

    public Layer() {
        nodes.put("", new Node("", Kind.DIR, 0755, 0, 0, null, null, null, "the layer"));
    }

    /** What {@link #addTree} left out and why, one line each ({@code usr/bin/x: setuid}). */
    public List<String> skipped() {
        return Collections.unmodifiableList(skipped);
    }

    /** The paths in the layer, sorted (the root is {@code ""}). */
    public Set<String> paths() {
        return Collections.unmodifiableSet(nodes.keySet());
    }

    public Layer dir(String path, int mode, int uid, int gid) {
        return put(new Node(clean(path), Kind.DIR, mode, uid, gid, null, null, null, "qvm"));
    }

    public Layer file(String path, int mode, byte[] bytes) {
        checkMode(path, mode);
        return put(new Node(clean(path), Kind.FILE, mode, 0, 0, null, bytes.clone(), null, "qvm"));
    }

    public Layer file(String path, int mode, Path file) {
        checkMode(path, mode);
        return put(new Node(clean(path), Kind.FILE, mode, 0, 0, file, null, null, file.toString()));
    }

    public Layer symlink(String path, String target) {
        return put(new Node(clean(path), Kind.SYMLINK, 0777, 0, 0, null, null, target, "qvm"));
    }

    /**
     * Adds every path under {@code root} (not following symlinks) at the same place in the layer,
     * owned by root, with the tree's permission bits. A hard link becomes a second regular file.
     */
    public Layer addTree(Path root, String source) throws IOException {
        List<Path> all;
        try (Stream<Path> s = Files.walk(root)) {
            all = s.sorted().toList();
        }
        for (Path p : all) {
            String rel = root.relativize(p).toString().replace('\\', '/');
            if (rel.isEmpty()) {
                continue;
            }
            Map<String, Object> a = Files.readAttributes(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            int mode = (Integer) a.get("mode");
            int type = mode & 0170000;
            int perm = mode & 07777;
            if (type == 0040000) {
                put(new Node(rel, Kind.DIR, perm & 01777, 0, 0, null, null, null, source));
            } else if (type == 0120000) {
                put(new Node(rel, Kind.SYMLINK, 0777, 0, 0, null, null, Files.readSymbolicLink(p).toString(), source));
            } else if (type == 0100000) {
                if ((perm & 06000) != 0) {
                    skipped.add(rel + ": " + ((perm & 04000) != 0 ? "setuid" : "setgid") + " (" + source + ")");
                    continue;
                }
                put(new Node(rel, Kind.FILE, perm, 0, 0, p, null, null, source));
            } else {
                skipped.add(rel + ": device node, FIFO or socket (" + source + ")");
            }
        }
        return this;
    }

    private static void checkMode(String path, int mode) {
        if ((mode & ~0777) != 0) {
            throw new IllegalArgumentException(path + ": mode " + Integer.toOctalString(mode)
                    + " has setuid, setgid or sticky bits, which a layer file may not have");
        }
    }

    private static String clean(String path) {
        String p = path.startsWith("/") ? path.substring(1) : path;
        if (p.endsWith("/")) {
            p = p.substring(0, p.length() - 1);
        }
        if (p.isEmpty() || p.contains("//") || Arrays.asList(p.split("/")).contains("..")) {
            throw new IllegalArgumentException("not a path a layer may hold: '" + path + "'");
        }
        return p;
    }

    private Layer put(Node n) {
        Node old = nodes.get(n.path());
        if (old != null && !agree(old, n)) {
            throw new IllegalStateException(n.path() + " differs between " + old.source() + " and " + n.source()
                    + " (" + old.kind() + " vs " + n.kind() + ")");
        }
        if (old == null || n.kind() == Kind.DIR && "qvm".equals(n.source())) {
            nodes.put(n.path(), n); // a directory qvm names (owner, mode) wins over a package's
        }
        return this;
    }

    private static boolean agree(Node a, Node b) {
        if (a.kind() != b.kind()) {
            return false;
        }
        try {
            return switch (a.kind()) {
                case DIR -> true;
                case SYMLINK -> a.linkTarget().equals(b.linkTarget());
                case FILE -> a.mode() == b.mode() && Arrays.equals(readAll(a), readAll(b));
            };
        } catch (IOException e) {
            throw new IllegalStateException("cannot compare " + a.path() + ": " + e, e);
        }
    }

    private static byte[] readAll(Node n) throws IOException {
        try (InputStream in = n.open()) {
            return in.readAllBytes();
        }
    }

    /** Writes the layer as an uncompressed tar; every entry's mtime is {@code mtimeSeconds}. */
    public void writeTar(OutputStream out, long mtimeSeconds) throws IOException {
        TarArchiveOutputStream tar = new TarArchiveOutputStream(out, "UTF-8");
        tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
        for (String missing : missingParents()) {
            nodes.put(missing, new Node(missing, Kind.DIR, 0755, 0, 0, null, null, null, "implied"));
        }
        java.nio.file.attribute.FileTime t = java.nio.file.attribute.FileTime.from(mtimeSeconds,
                java.util.concurrent.TimeUnit.SECONDS);
        for (Node n : nodes.values()) {
            if (n.path().isEmpty()) {
                continue; // the root: the engine's, not the layer's
            }
            TarArchiveEntry e;
            if (n.kind() == Kind.SYMLINK) {
                e = new TarArchiveEntry(n.path(), TarConstants.LF_SYMLINK);
                e.setLinkName(n.linkTarget());
            } else if (n.kind() == Kind.DIR) {
                e = new TarArchiveEntry(n.path() + "/");
            } else {
                e = new TarArchiveEntry(n.path());
                e.setSize(n.size());
            }
            e.setMode((n.kind() == Kind.DIR ? 0040000 : n.kind() == Kind.SYMLINK ? 0120000 : 0100000) | n.mode());
            e.setModTime(t);
            e.setIds(n.uid(), n.gid());
            e.setUserName("");
            e.setGroupName("");
            tar.putArchiveEntry(e);
            if (n.kind() == Kind.FILE) {
                try (InputStream in = n.open()) {
                    long copied = in.transferTo(tar);
                    if (copied != e.getSize()) {
                        throw new IOException(n.path() + " changed while it was written (" + copied + " bytes, "
                                + e.getSize() + " expected)");
                    }
                }
            }
            tar.closeArchiveEntry();
        }
        tar.finish();
    }

    private Set<String> missingParents() {
        Set<String> missing = new java.util.TreeSet<>();
        for (String p : nodes.keySet()) {
            for (int i = p.indexOf('/'); i > 0; i = p.indexOf('/', i + 1)) {
                String parent = p.substring(0, i);
                Node n = nodes.get(parent);
                if (n == null) {
                    missing.add(parent);
                } else if (n.kind() != Kind.DIR) {
                    throw new IllegalStateException(p + " lies under " + parent + ", which is a " + n.kind()
                            + " (" + n.source() + ")");
                }
            }
        }
        return missing;
    }

}
