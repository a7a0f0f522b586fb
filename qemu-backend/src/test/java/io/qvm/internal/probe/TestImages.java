package io.qvm.internal.probe;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.zip.GZIPOutputStream;

/**
 * Finds a real kernel for tests that boot one, and builds a tiny initramfs from the host's static
 * busybox. Kernel search: {@code $QVM_TEST_KERNEL}, the repository's {@code out/image/<arch>/vmlinuz},
 * then {@code /boot/vmlinuz-*}.
 */
public final class TestImages {

    private TestImages() {
    }

    /** A bootable x86_64 kernel, if this machine has one. */
    public static Optional<Path> x86Kernel() {
        String env = System.getenv("QVM_TEST_KERNEL");
        if (env != null && Files.isReadable(Path.of(env))) {
            return Optional.of(Path.of(env));
        }
        Path base = Path.of(System.getProperty("basedir", ".")).toAbsolutePath();
        for (Path p = base; p != null; p = p.getParent()) {
            Path k = p.resolve("out/image/x86_64/vmlinuz");
            if (Files.isReadable(k)) {
                return Optional.of(k);
            }
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/boot"), "vmlinuz-*")) {
            for (Path k : ds) {
                if (Files.isReadable(k)) {
                    return Optional.of(k);
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // no /boot
        }
        return Optional.empty();
    }

    /** The host's static busybox, if installed (Debian: busybox-static). */
    public static Optional<Path> staticBusybox() {
        for (String p : new String[] {"/bin/busybox", "/usr/bin/busybox"}) {
            Path b = Path.of(p);
            if (Files.isReadable(b)) {
                return Optional.of(b);
            }
        }
        return Optional.empty();
    }

    /**
     * Writes a gzip'd newc cpio holding {@code /bin/busybox} and an {@code /init} script that
     * prints {@code marker} on the console and powers off.
     */
    public static Path busyboxInitramfs(Path busybox, String marker, Path out) throws IOException {
        String init = "#!/bin/busybox sh\n/bin/busybox mount -t proc proc /proc\n"
                + "echo \"" + marker + " uptime=$(/bin/busybox cut -d' ' -f1 /proc/uptime) cmdline=$(/bin/busybox cat /proc/cmdline)\"\n"
                + "/bin/busybox poweroff -f\n";
        ByteArrayOutputStream cpio = new ByteArrayOutputStream();
        int ino = 1;
        entry(cpio, ino++, "bin", 040755, new byte[0]);
        entry(cpio, ino++, "proc", 040755, new byte[0]);
        entry(cpio, ino++, "dev", 040755, new byte[0]);
        entry(cpio, ino++, "bin/busybox", 0100755, Files.readAllBytes(busybox));
        entry(cpio, ino++, "init", 0100755, init.getBytes(StandardCharsets.US_ASCII));
        entry(cpio, ino, "TRAILER!!!", 0, new byte[0]);
        try (OutputStream o = new GZIPOutputStream(Files.newOutputStream(out))) {
            cpio.writeTo(o);
        }
        return out;
    }

    private static void entry(ByteArrayOutputStream out, int ino, String name, int mode, byte[] data) throws IOException {
        byte[] n = (name + "\0").getBytes(StandardCharsets.US_ASCII);
        String h = String.format("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, mode, 0, 0, 1, 0,
                data.length, 0, 0, 0, 0, n.length, 0);
        out.write(h.getBytes(StandardCharsets.US_ASCII));
        out.write(n);
        pad(out);
        out.write(data);
        pad(out);
    }

    private static void pad(ByteArrayOutputStream out) {
        while (out.size() % 4 != 0) {
            out.write(0);
        }
    }
}
