package io.qvm.image;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A deterministic writer of the cpio "newc" format the Linux kernel unpacks as an initramfs.
 *
 * <pre>
 *  one entry:
 *  +--------+-----+------+-----+-----+-------+-------+----------+-------+-------+--------+--------+----------+-------+
 *  | 070701 | ino | mode | uid | gid | nlink | mtime | filesize | devmj | devmn | rdevmj | rdevmn | namesize | check |
 *  +--------+-----+------+-----+-----+-------+-------+----------+-------+-------+--------+--------+----------+-------+
 *     6 B     each field 8 ASCII hex digits (13 fields, 104 B)                                        = 110 B header
 *  then the name, NUL-terminated, padded with NULs to a multiple of 4 (counting the header),
 *  then the data (file bytes, or a symlink's target), padded to a multiple of 4.
 *  The archive ends with an entry named "TRAILER!!!".
 * </pre>
 *
 * <p>Determinism is the caller's order plus this writer's fixed choices: inode numbers count up
 * from 1 in write order, uid and gid are 0, every mtime is the one given to the constructor (0 or
 * SOURCE_DATE_EPOCH), nlink is 1 (2 for directories), device numbers are 0 except for explicit
 * device nodes. Names are written without a leading "/" (as the kernel's own gen_init_cpio does).
 */
public final class CpioWriter implements Closeable {
    public static final int S_IFDIR = 0040000;
    public static final int S_IFREG = 0100000;
    public static final int S_IFLNK = 0120000;
    public static final int S_IFCHR = 0020000;

    private final OutputStream out;
    private final long mtime;
    private long offset;
    private int nextInode = 1;
    private boolean finished;
    private String lastName = "";

    /** @param mtime seconds since the epoch stamped on every entry (0 or SOURCE_DATE_EPOCH) */
    public CpioWriter(OutputStream out, long mtime) {
        if (mtime < 0 || mtime > 0xffffffffL) {
            throw new IllegalArgumentException("mtime must fit in 32 bits, got " + mtime);
        }
        this.out = out;
        this.mtime = mtime;
    }

    public void directory(String name, int perm) throws IOException {
        header(name, S_IFDIR | (perm & 07777), 2, 0, 0, 0);
        padName(name);
    }

    public void file(String name, int perm, byte[] data) throws IOException {
        header(name, S_IFREG | (perm & 07777), 1, data.length, 0, 0);
        padName(name);
        out.write(data);
        offset += data.length;
        pad();
    }

    public void file(String name, int perm, Path source) throws IOException {
        long size = Files.size(source);
        if (size > 0xffffffffL) {
            throw new ImageException(source + " is larger than 4 GiB, which cpio newc cannot hold");
        }
        header(name, S_IFREG | (perm & 07777), 1, size, 0, 0);
        padName(name);
        long copied;
        try (InputStream in = Files.newInputStream(source)) {
            copied = in.transferTo(out);
        }
        if (copied != size) {
            throw new ImageException(source + " changed size while being archived (" + size
                    + " then " + copied + " bytes)");
        }
        offset += size;
        pad();
    }

    public void symlink(String name, String target) throws IOException {
        byte[] t = target.getBytes(StandardCharsets.UTF_8);
        header(name, S_IFLNK | 0777, 1, t.length, 0, 0);
        padName(name);
        out.write(t);
        offset += t.length;
        pad();
    }

    public void charDevice(String name, int perm, int major, int minor) throws IOException {
        header(name, S_IFCHR | (perm & 07777), 1, 0, major, minor);
        padName(name);
    }

    /** Writes the trailer. Idempotent. Does not close the underlying stream. */
    public void finish() throws IOException {
        if (finished) {
            return;
        }
        finished = true;
        writeHeader("TRAILER!!!", 0, 0, 1, 0, 0, 0);
        padName("TRAILER!!!");
        out.flush();
    }

    @Override
    public void close() throws IOException {
        finish();
        out.close();
    }

    private void header(String name, int mode, int nlink, long size, int rmaj, int rmin)
            throws IOException {
        if (finished) {
            throw new IllegalStateException("archive already finished");
        }
        if (name.isEmpty() || name.startsWith("/") || name.contains("//") || name.endsWith("/")) {
            throw new IllegalArgumentException("bad cpio entry name '" + name + "'");
        }
        if (name.compareTo(lastName) <= 0) {
            throw new IllegalArgumentException("cpio entries must be written in strictly sorted "
                    + "order for a deterministic archive: '" + name + "' after '" + lastName + "'");
        }
        lastName = name;
        writeHeader(name, nextInode++, mode, nlink, size, rmaj, rmin);
    }

    private void writeHeader(String name, int ino, int mode, int nlink, long size, int rmaj,
            int rmin) throws IOException {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        StringBuilder h = new StringBuilder(110);
        h.append("070701");
        hex(h, ino);
        hex(h, mode);
        hex(h, 0); // uid
        hex(h, 0); // gid
        hex(h, nlink);
        hex(h, mtime);
        hex(h, size);
        hex(h, 0); // devmajor
        hex(h, 0); // devminor
        hex(h, rmaj);
        hex(h, rmin);
        hex(h, n.length + 1L);
        hex(h, 0); // check
        out.write(h.toString().getBytes(StandardCharsets.US_ASCII));
        out.write(n);
        out.write(0);
        offset += 110 + n.length + 1;
    }

    private void padName(String name) throws IOException {
        pad();
    }

    private void pad() throws IOException {
        while (offset % 4 != 0) {
            out.write(0);
            offset++;
        }
    }

    private static void hex(StringBuilder sb, long v) {
        String s = Long.toHexString(v);
        for (int i = s.length(); i < 8; i++) {
            sb.append('0');
        }
        sb.append(s);
    }
}
