package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class CpioWriterTest {

    /** The same tree, created twice in different orders with different mtimes, packs to the same bytes. */
    @Test
    void sameTreeGivesTheSameArchiveWhateverTheFilesystemSays(@TempDir Path tmp) throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        makeTree(a, false);
        makeTree(b, true);
        Files.setLastModifiedTime(b.resolve("init"), FileTime.fromMillis(1_700_000_000_000L));

        Path ga = tmp.resolve("a.cpio.lz4");
        Path gb = tmp.resolve("b.cpio.lz4");
        InitramfsArchive.write(a, ga, 0);
        InitramfsArchive.write(b, gb, 0);
        assertArrayEquals(Files.readAllBytes(ga), Files.readAllBytes(gb));

        byte[] lz = Files.readAllBytes(ga);
        // the LZ4 legacy magic, little-endian; a chunk size of 0 ends it; a whole number of 4-byte words
        assertEquals(List.of(0x02, 0x21, 0x4c, 0x18), List.of(lz[0] & 0xff, lz[1] & 0xff, lz[2] & 0xff, lz[3] & 0xff));
        assertEquals(0, lz.length % 4);
        int p = Lz4LegacyTest.endOfChunks(lz);
        assertTrue(lz.length - (p + 4) < 4, "after the end mark only the padding: " + (lz.length - p - 4) + " bytes");
    }

    @Test
    void entriesAreSortedWithFixedMetadata(@TempDir Path tmp) throws Exception {
        Path root = tmp.resolve("r");
        makeTree(root, true);
        Path lz = tmp.resolve("r.cpio.lz4");
        InitramfsArchive.write(root, lz, 1234);
        byte[] cpio;
        try (InputStream in = new Lz4LegacyInputStream(Files.newInputStream(lz))) {
            cpio = in.readAllBytes();
        }
        List<String[]> entries = parse(cpio);
        List<String> names = new ArrayList<>();
        int ino = 1;
        for (String[] e : entries) {
            names.add(e[0]);
            if (e[0].equals("TRAILER!!!")) {
                continue;
            }
            assertEquals(ino++, Integer.parseInt(e[1], 16), "inode of " + e[0]);
            assertEquals(0, Integer.parseInt(e[3], 16), "uid of " + e[0]);
            assertEquals(0, Integer.parseInt(e[4], 16), "gid of " + e[0]);
            assertEquals(1234, Integer.parseInt(e[6], 16), "mtime of " + e[0]);
        }
        assertEquals(List.of("bin", "bin/busybox", "bin/sh", "dev", "dev/console", "etc", "etc/a.conf",
                "init", "TRAILER!!!"), names);
        String[] sh = entries.get(2);
        assertEquals(CpioWriter.S_IFLNK | 0777, Integer.parseInt(sh[2], 16));
        String[] init = entries.get(7);
        assertEquals(CpioWriter.S_IFREG | 0755, Integer.parseInt(init[2], 16));
        String[] conf = entries.get(6);
        assertEquals(CpioWriter.S_IFREG | 0644, Integer.parseInt(conf[2], 16));
        String[] console = entries.get(4);
        assertEquals(CpioWriter.S_IFCHR | 0600, Integer.parseInt(console[2], 16));
        assertEquals(5, Integer.parseInt(console[10], 16));
        assertEquals(1, Integer.parseInt(console[11], 16));
    }

    @Test
    void unsortedEntriesAreRefused() throws Exception {
        CpioWriter w = new CpioWriter(new ByteArrayOutputStream(), 0);
        w.directory("b", 0755);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> w.directory("a", 0755));
        assertTrue(e.getMessage().contains("sorted"), e.getMessage());
    }

    @Test
    void headerLayoutIsNewc() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        CpioWriter w = new CpioWriter(out, 0);
        w.file("x", 0644, "hello".getBytes(StandardCharsets.US_ASCII));
        w.finish();
        byte[] b = out.toByteArray();
        String head = new String(b, 0, 110, StandardCharsets.US_ASCII);
        assertEquals("070701", head.substring(0, 6));
        assertEquals("00000005", head.substring(54, 62), "filesize");
        assertEquals("00000002", head.substring(94, 102), "namesize incl. NUL");
        // 110 header + "x\0" = 112 (aligned), data 5 -> padded to 120
        assertEquals("hello", new String(b, 112, 5, StandardCharsets.US_ASCII));
        assertEquals(0, b.length % 4);
    }

    private static void makeTree(Path root, boolean reverse) throws Exception {
        List<Runnable> steps = new ArrayList<>();
        steps.add(() -> write(root.resolve("etc/a.conf"), "x=1\n", false));
        steps.add(() -> write(root.resolve("init"), "#!/bin/sh\n", true));
        steps.add(() -> write(root.resolve("bin/busybox"), "ELF...", true));
        if (reverse) {
            java.util.Collections.reverse(steps);
        }
        steps.forEach(Runnable::run);
        Files.createSymbolicLink(root.resolve("bin/sh"), Path.of("busybox"));
    }

    private static void write(Path p, String s, boolean exec) {
        try {
            Files.createDirectories(p.getParent());
            Files.writeString(p, s);
            p.toFile().setExecutable(exec, false);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Returns {name, ino, mode, uid, gid, nlink, mtime, size, devmaj, devmin, rdevmaj, rdevmin}. */
    private static List<String[]> parse(byte[] b) {
        List<String[]> out = new ArrayList<>();
        int off = 0;
        while (true) {
            String h = new String(b, off, 110, StandardCharsets.US_ASCII);
            assertEquals("070701", h.substring(0, 6));
            String[] f = new String[12];
            for (int i = 0; i < 11; i++) {
                f[i + 1] = h.substring(6 + i * 8, 14 + i * 8);
            }
            int namesize = Integer.parseInt(h.substring(94, 102), 16);
            int size = Integer.parseInt(f[7], 16);
            f[0] = new String(b, off + 110, namesize - 1, StandardCharsets.UTF_8);
            out.add(f);
            off = align(off + 110 + namesize);
            off = align(off + size);
            if (f[0].equals("TRAILER!!!")) {
                return out;
            }
        }
    }

    private static int align(int x) {
        return (x + 3) & ~3;
    }
}
