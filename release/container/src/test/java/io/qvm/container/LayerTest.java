package io.qvm.container;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class LayerTest {
    private static final long EPOCH = Instant.parse("2026-01-01T00:00:00Z").getEpochSecond();

    @TempDir
    Path tmp;

    /** A package-like tree, written in an order unlike the sorted one. */
    private Path tree(String name) throws IOException {
        Path root = tmp.resolve(name);
        Files.createDirectories(root.resolve("usr/lib/x86_64-linux-gnu"));
        Files.createDirectories(root.resolve("usr/bin"));
        Files.writeString(root.resolve("usr/bin/zz"), "z");
        Files.writeString(root.resolve("usr/bin/aa"), "a");
        Files.writeString(root.resolve("usr/lib/x86_64-linux-gnu/libx.so.1.0"), "elf");
        Files.createSymbolicLink(root.resolve("usr/lib/x86_64-linux-gnu/libx.so.1"), Path.of("libx.so.1.0"));
        Files.setLastModifiedTime(root.resolve("usr/bin/zz"), java.nio.file.attribute.FileTime.fromMillis(123456789L));
        return root;
    }

    private static byte[] tar(Layer l) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        l.writeTar(out, EPOCH);
        return out.toByteArray();
    }

    private static List<TarArchiveEntry> entries(byte[] tar) throws IOException {
        List<TarArchiveEntry> l = new ArrayList<>();
        try (TarArchiveInputStream in = new TarArchiveInputStream(new ByteArrayInputStream(tar))) {
            for (TarArchiveEntry e; (e = in.getNextEntry()) != null;) {
                l.add(e);
            }
        }
        return l;
    }

    @Test
    void sameTreeSameBytesSortedWithOneMtimeAndNumericOwners() throws IOException {
        byte[] a = tar(new Layer().addTree(tree("a"), "a").dir("var/lib/qvm", 0755, 10001, 10001));
        byte[] b = tar(new Layer().addTree(tree("b"), "b").dir("var/lib/qvm", 0755, 10001, 10001));
        assertArrayEquals(a, b);
        List<TarArchiveEntry> es = entries(a);
        List<String> names = es.stream().map(TarArchiveEntry::getName).toList();
        assertEquals(List.of("usr/", "usr/bin/", "usr/bin/aa", "usr/bin/zz", "usr/lib/", "usr/lib/x86_64-linux-gnu/",
                "usr/lib/x86_64-linux-gnu/libx.so.1", "usr/lib/x86_64-linux-gnu/libx.so.1.0", "var/", "var/lib/",
                "var/lib/qvm/"), names);
        for (TarArchiveEntry e : es) {
            assertEquals(EPOCH, e.getModTime().getTime() / 1000, e.getName());
            assertEquals("", e.getUserName(), e.getName());
            int owner = e.getName().equals("var/lib/qvm/") ? 10001 : 0;
            assertEquals(owner, e.getLongUserId(), e.getName());
            assertEquals(owner, e.getLongGroupId(), e.getName());
        }
        assertEquals("libx.so.1.0", es.get(6).getLinkName());
        assertTrue(es.get(6).isSymbolicLink());
    }

    @Test
    void setuidFilesAreLeftOutAndNamed() throws IOException {
        Path root = tree("s");
        Path su = root.resolve("usr/bin/su");
        Files.writeString(su, "su");
        Files.setAttribute(su, "unix:mode", 04755);
        Layer l = new Layer().addTree(root, "pkg 1.0");
        assertEquals(List.of("usr/bin/su: setuid (pkg 1.0)"), l.skipped());
        assertTrue(entries(tar(l)).stream().noneMatch(e -> e.getName().equals("usr/bin/su")));
        assertThrows(IllegalArgumentException.class, () -> new Layer().file("x", 04755, new byte[0]));
    }

    @Test
    void twoSourcesMustAgreeOnAPath() throws IOException {
        Path a = tree("a");
        Path b = tree("b");
        new Layer().addTree(a, "a").addTree(b, "b"); // identical: fine
        Files.writeString(b.resolve("usr/bin/aa"), "other");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new Layer().addTree(a, "a").addTree(b, "b"));
        assertTrue(e.getMessage().contains("usr/bin/aa differs between a and b"), e.getMessage());
    }

    @Test
    void qvmDirectoriesOverrideAPackagesOwnerAndMode() throws IOException {
        Path root = tmp.resolve("t");
        Files.createDirectories(root.resolve("tmp"));
        Files.setPosixFilePermissions(root.resolve("tmp"), PosixFilePermissions.fromString("rwxr-xr-x"));
        byte[] t = tar(new Layer().addTree(root, "p").dir("tmp", 01777, 0, 0));
        TarArchiveEntry e = entries(t).get(0);
        assertEquals("tmp/", e.getName());
        assertEquals(01777, e.getMode() & 07777);
    }

    @Test
    void refusesPathsThatClimb() {
        assertThrows(IllegalArgumentException.class, () -> new Layer().file("../etc/passwd", 0644,
                "x".getBytes(StandardCharsets.UTF_8)));
    }
}
