package io.qvm.internal.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Loading an image directory: verified once, by the protocol's verifier; the first problem refuses it. */
@Tag("unit")
class GuestImageTest {

    @TempDir
    Path root;

    private Path image() throws IOException {
        Path dir = root.resolve("x86_64");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(GuestImage.KERNEL), "kernel");
        Files.writeString(dir.resolve(GuestImage.INITRD), "initramfs");
        Files.writeString(dir.resolve(GuestImage.MANIFEST),
                "{\"arch\":\"x86_64\",\"kernel\":{\"version\":\"6.1.0-57-amd64\"},\"transports\":[\"serial\",\"vsock\"]}");
        StringBuilder sums = new StringBuilder();
        for (String f : List.of(GuestImage.KERNEL, GuestImage.INITRD, GuestImage.MANIFEST)) {
            sums.append(Sha256.of(dir.resolve(f))).append("  ").append(f).append('\n');
        }
        Files.writeString(dir.resolve(GuestImage.SUMS), sums.toString());
        return dir;
    }

    @Test
    void aVerifiedImageExposesItsFilesAndManifest() throws IOException {
        Path dir = image();
        GuestImage img = GuestImage.load(root, Arch.X86_64);
        assertEquals(dir.resolve("vmlinuz"), img.kernel());
        assertEquals(dir.resolve("initramfs.cpio.lz4"), img.initrd());
        assertEquals("6.1.0-57-amd64", img.kernelVersion().orElseThrow());
        assertEquals(List.of("serial", "vsock"), img.transports());
        assertEquals(Sha256.of(dir.resolve("vmlinuz")), img.sha256().get("vmlinuz"));
    }

    @Test
    void aTamperedOrMissingImageIsRefusedWithHowToRebuild() throws IOException {
        HostSetupException none = assertThrows(HostSetupException.class, () -> GuestImage.load(root, Arch.X86_64));
        assertTrue(none.getMessage().startsWith("no guest image for x86_64 at " + root.resolve("x86_64") + "."),
                none.getMessage());
        Path dir = image();
        Files.writeString(dir.resolve("initramfs.cpio.lz4"), "initramfs, patched");
        HostSetupException e = assertThrows(HostSetupException.class, () -> GuestImage.load(root, Arch.X86_64));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().startsWith("checksum mismatch for " + dir.resolve("initramfs.cpio.lz4")), e.getMessage());
        assertTrue(e.getMessage().endsWith(". Build it with: ./qvm image build --arch x86_64 --out " + root),
                e.getMessage());
    }

    @Test
    void anImageOfAnEarlierQvmIsRefusedAsSuchWithHowToRebuild() throws IOException {
        Path dir = image();
        Files.move(dir.resolve(GuestImage.INITRD), dir.resolve("initramfs.cpio.gz"));
        Files.writeString(dir.resolve(GuestImage.SUMS), Files.readString(dir.resolve(GuestImage.SUMS))
                .replace(GuestImage.INITRD, "initramfs.cpio.gz"));
        HostSetupException e = assertThrows(HostSetupException.class, () -> GuestImage.load(root, Arch.X86_64));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertEquals("the guest image at " + dir + " was built by an earlier qvm: its initramfs is initramfs.cpio.gz"
                + " (gzip), and this qvm boots initramfs.cpio.lz4 (LZ4, since 2026-12-07). Build it with: ./qvm image"
                + " build --arch x86_64 --out " + root, e.getMessage());
    }
}
