package io.qvm.image;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.compress.archivers.ar.ArArchiveEntry;
import org.apache.commons.compress.archivers.ar.ArArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;
import org.apache.commons.compress.compressors.xz.XZCompressorOutputStream;

/**
 * Writes real .deb files (ar: debian-binary, control.tar.xz, data.tar.*) for tests, member by
 * member, including the hostile ones a real Debian tool would never write. dpkg-deb reads them.
 */
final class SyntheticDeb {
    private final List<TarArchiveEntry> entries = new ArrayList<>();
    private final List<byte[]> contents = new ArrayList<>();
    private String dataMember = "data.tar.xz";
    private final long mtime = 1_700_000_000L;

    SyntheticDeb dir(String name, int mode) {
        TarArchiveEntry e = new TarArchiveEntry(name.endsWith("/") ? name : name + "/", true);
        e.setMode(mode);
        return add(e, null);
    }

    SyntheticDeb file(String name, int mode, String content) {
        byte[] b = content.getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry e = new TarArchiveEntry(name, true);
        e.setMode(mode);
        e.setSize(b.length);
        return add(e, b);
    }

    SyntheticDeb symlink(String name, String target) {
        TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_SYMLINK, true);
        e.setLinkName(target);
        e.setMode(0777);
        return add(e, null);
    }

    SyntheticDeb hardlink(String name, String target) {
        TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_LINK, true);
        e.setLinkName(target);
        e.setMode(0644);
        return add(e, null);
    }

    SyntheticDeb fifo(String name) {
        TarArchiveEntry e = new TarArchiveEntry(name, TarConstants.LF_FIFO, true);
        e.setMode(0644);
        return add(e, null);
    }

    /** data.tar, data.tar.xz, data.tar.gz or data.tar.zst (the last with garbage bytes). */
    SyntheticDeb dataMember(String name) {
        this.dataMember = name;
        return this;
    }

    private SyntheticDeb add(TarArchiveEntry e, byte[] content) {
        e.setModTime(mtime * 1000);
        e.setUserName("root");
        e.setGroupName("root");
        entries.add(e);
        contents.add(content);
        return this;
    }

    Path write(Path deb) throws IOException {
        byte[] control = tar(List.of(controlEntry()), List.of(CONTROL), true);
        byte[] data = dataMember.equals("data.tar.zst")
                ? new byte[] {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd, 0, 0, 0, 0}
                : tar(entries, contents, dataMember.endsWith(".xz"));
        if (dataMember.endsWith(".gz")) {
            ByteArrayOutputStream bo = new ByteArrayOutputStream();
            try (OutputStream gz = new GzipCompressorOutputStream(bo)) {
                gz.write(tar(entries, contents, false));
            }
            data = bo.toByteArray();
        }
        Files.createDirectories(deb.toAbsolutePath().getParent());
        try (ArArchiveOutputStream ar = new ArArchiveOutputStream(Files.newOutputStream(deb))) {
            member(ar, "debian-binary", "2.0\n".getBytes(StandardCharsets.US_ASCII));
            member(ar, "control.tar.xz", control);
            member(ar, dataMember, data);
        }
        return deb;
    }

    private static final byte[] CONTROL = ("Package: synthetic\nVersion: 1\nArchitecture: all\n"
            + "Maintainer: qvm tests <tests@invalid>\nDescription: test package\n")
            .getBytes(StandardCharsets.UTF_8);

    private TarArchiveEntry controlEntry() {
        TarArchiveEntry e = new TarArchiveEntry("./control");
        e.setSize(CONTROL.length);
        e.setMode(0644);
        e.setModTime(mtime * 1000);
        return e;
    }

    private static void member(ArArchiveOutputStream ar, String name, byte[] b) throws IOException {
        ar.putArchiveEntry(new ArArchiveEntry(name, b.length, 0, 0, 0100644, 1_700_000_000L));
        ar.write(b);
        ar.closeArchiveEntry();
    }

    private static byte[] tar(List<TarArchiveEntry> es, List<byte[]> cs, boolean xz) throws IOException {
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        try (OutputStream sink = xz ? new XZCompressorOutputStream(bo) : bo;
                TarArchiveOutputStream tar = new TarArchiveOutputStream(sink)) {
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_GNU);
            for (int i = 0; i < es.size(); i++) {
                tar.putArchiveEntry(es.get(i));
                if (cs.get(i) != null) {
                    tar.write(cs.get(i));
                }
                tar.closeArchiveEntry();
            }
        }
        return bo.toByteArray();
    }
}
