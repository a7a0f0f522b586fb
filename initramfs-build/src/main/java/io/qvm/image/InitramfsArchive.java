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
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;

/**
 * Packs a staging directory into {@code initramfs.cpio.gz}, deterministically: entries sorted by
 * path, modes normalised (directories and executables 0755, other files 0644, symlinks 0777),
 * uid/gid 0, one fixed mtime, inode numbers in order, plus a {@code dev/console} node (5:1) so
 * the init has a console before it mounts devtmpfs. Compressed with {@link GZIPOutputStream},
 * which writes a header without a file name and with mtime 0.
 */
public final class InitramfsArchive {
    private InitramfsArchive() {
    }

    /** Writes the archive of {@code root} to {@code target} (gzip, best compression). */
    public static void write(Path root, Path target, long mtime) throws IOException {
        try (OutputStream fo = new BufferedOutputStream(Files.newOutputStream(target), 1 << 20);
                GZIPOutputStream gz = new BestGzip(fo)) {
            CpioWriter cpio = new CpioWriter(gz, mtime);
            writeTree(root, cpio);
            cpio.finish();
            gz.finish();
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

    /** gzip at level 9; the JDK's header carries no name and mtime 0. */
    static final class BestGzip extends GZIPOutputStream {
        BestGzip(OutputStream out) throws IOException {
            super(out, 1 << 16);
            def.setLevel(Deflater.BEST_COMPRESSION);
        }
    }
}
