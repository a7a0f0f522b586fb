package io.qvm.image;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Packs a staging directory into {@code initramfs.cpio.lz4}, deterministically: entries sorted by
 * path, modes normalised (directories and executables 0755, other files 0644, symlinks 0777),
 * uid/gid 0, one fixed mtime, inode numbers in order, plus a {@code dev/console} node (5:1) so
 * the init has a console before it mounts devtmpfs. Compressed with
 * {@link Lz4LegacyOutputStream}, whose output depends on the bytes alone.
 */
public final class InitramfsArchive {
    /** How the archive is packed: part of an image's recipe, so that a change of it rebuilds the image. */
    static final String FORMAT = "cpio newc; LZ4 legacy, 8 MiB chunks, greedy, chain depth "
            + Lz4LegacyOutputStream.CHAIN_DEPTH + ", ended by a zero chunk size and padded to 4 bytes";

    private InitramfsArchive() {
    }

    /** Writes the archive of {@code root} to {@code target} (LZ4, the kernel's legacy format). */
    public static void write(Path root, Path target, long mtime) throws IOException {
        try (OutputStream lz = new Lz4LegacyOutputStream(new BufferedOutputStream(Files.newOutputStream(target),
                1 << 20))) {
            CpioWriter cpio = new CpioWriter(lz, mtime);
            writeTree(root, cpio);
            cpio.finish();
        }
    }

    /** Writes every entry under {@code root} (not root itself) in sorted order. */
    public static void writeTree(Path root, CpioWriter cpio) throws IOException {
        List<String> names = new ArrayList<>();
        try (Stream<Path> s = Files.walk(root)) {
            s.filter(p -> !p.equals(root))
                    .map(p -> root.relativize(p).toString().replace('\\', '/'))
                    .forEach(names::add);
        }
        boolean hasDev = names.contains("dev");
        if (!hasDev) {
            names.add("dev");
        }
        if (!names.contains("dev/console")) {
            names.add("dev/console");
        }
        names.sort(null);
        for (String name : names) {
            Path p = root.resolve(name);
            if (name.equals("dev/console") && !Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                cpio.charDevice(name, 0600, 5, 1);
            } else if (name.equals("dev") && !Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                cpio.directory(name, 0755);
            } else if (Files.isSymbolicLink(p)) {
                cpio.symlink(name, Files.readSymbolicLink(p).toString());
            } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                cpio.directory(name, 0755);
            } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                cpio.file(name, Files.isExecutable(p) ? 0755 : 0644, p);
            } else {
                throw new ImageException("cannot archive " + p + ": not a file, directory or symlink");
            }
        }
    }
}
