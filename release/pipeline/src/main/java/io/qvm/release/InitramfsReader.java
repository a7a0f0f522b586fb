package io.qvm.release;

import io.qvm.image.Lz4LegacyInputStream;
import io.qvm.protocol.util.Sha256;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.apache.commons.compress.archivers.cpio.CpioArchiveEntry;
import org.apache.commons.compress.archivers.cpio.CpioArchiveInputStream;

/**
 * Reads an image's {@code initramfs.cpio.lz4} (LZ4's legacy format over cpio "newc", as
 * {@code InitramfsArchive} writes it) with {@link Lz4LegacyInputStream} and Commons Compress: one entry's bytes, or the first entry where two archives
 * differ — the why of a build that was not reproducible.
 */
public final class InitramfsReader {

    /** The most an entry read into memory may hold (the worker jar is about 10 MB). */
    static final long MAX_ENTRY_BYTES = 256L << 20;

    private InitramfsReader() {
    }

    /** The bytes of the regular file {@code name} (no leading slash) in the archive, if it has one. */
    public static Optional<byte[]> entry(Path initramfs, String name) throws IOException {
        try (CpioArchiveInputStream cpio = open(initramfs)) {
            for (CpioArchiveEntry e; (e = cpio.getNextCPIOEntry()) != null; ) {
                if (e.getName().equals(name) && e.isRegularFile()) {
                    if (e.getSize() > MAX_ENTRY_BYTES) {
                        throw new IOException(name + " in " + initramfs + " is " + e.getSize()
                                + " bytes, more than " + MAX_ENTRY_BYTES + " read into memory");
                    }
                    return Optional.of(cpio.readNBytes((int) e.getSize()));
                }
            }
        }
        return Optional.empty();
    }

    /**
     * The first entry, in archive order, whose name, mode, owner, mtime or content differs
     * between the two archives, described with both sides' values; empty when every entry is the
     * same (the difference is then in the compression or the trailer).
     */
    public static Optional<String> firstDifference(Path first, Path second) throws IOException {
        try (CpioArchiveInputStream a = open(first); CpioArchiveInputStream b = open(second)) {
            for (int index = 0; ; index++) {
                CpioArchiveEntry ea = a.getNextCPIOEntry();
                CpioArchiveEntry eb = b.getNextCPIOEntry();
                if (ea == null && eb == null) {
                    return Optional.empty();
                }
                if (ea == null || eb == null) {
                    return Optional.of("entry " + index + ": the " + (ea == null ? "first" : "second")
                            + " archive ends where the other has " + (ea == null ? eb : ea).getName());
                }
                if (!ea.getName().equals(eb.getName())) {
                    return Optional.of("entry " + index + " is " + ea.getName() + " in the first archive and "
                            + eb.getName() + " in the second (file order)");
                }
                String meta = describe(ea);
                if (!meta.equals(describe(eb))) {
                    return Optional.of(ea.getName() + " has " + meta + " in the first archive and " + describe(eb)
                            + " in the second");
                }
                String ha = Sha256.of(a.readAllBytes());
                String hb = Sha256.of(b.readAllBytes());
                if (!ha.equals(hb)) {
                    return Optional.of(ea.getName() + " differs: sha256 " + ha + " in the first archive, " + hb
                            + " in the second");
                }
            }
        }
    }

    private static String describe(CpioArchiveEntry e) {
        return String.format("mode %o uid %d gid %d mtime %d size %d", e.getMode(), e.getUID(), e.getGID(),
                e.getTime(), e.getSize());
    }

    private static CpioArchiveInputStream open(Path lz4) throws IOException {
        InputStream in = new BufferedInputStream(Files.newInputStream(lz4), 1 << 16);
        try {
            return new CpioArchiveInputStream(new Lz4LegacyInputStream(in)); // it hands out whole 8 MiB chunks
        } catch (IOException e) {
            in.close();
            throw new IOException(lz4 + " is not an LZ4-compressed archive: " + e.getMessage(), e);
        }
    }
}
