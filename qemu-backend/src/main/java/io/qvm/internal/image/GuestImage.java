package io.qvm.internal.image;

import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.image.ImageManifest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A built guest image as the backend uses it: one directory per architecture holding
 * {@code vmlinuz}, {@code initramfs.cpio.lz4}, {@code manifest.json} and {@code SHA256SUMS}
 * (docs/CONTRACTS.md). {@link #load} refuses an image that {@link ImageDirectory#verify} finds a
 * problem with (incomplete, or files that do not match {@code SHA256SUMS}), so a truncated or
 * tampered initramfs never boots.
 *
 * @param arch the guest architecture
 * @param dir the image directory
 * @param manifest the parsed {@code manifest.json}
 * @param sha256 file name → SHA-256 as verified
 */
public record GuestImage(Arch arch, Path dir, ImageManifest manifest, Map<String, String> sha256) {

    public static final String KERNEL = ImageDirectory.KERNEL;
    public static final String INITRD = ImageDirectory.INITRAMFS;
    public static final String MANIFEST = ImageDirectory.MANIFEST;
    public static final String SUMS = ImageDirectory.SHA256SUMS;

    public GuestImage {
        sha256 = Map.copyOf(sha256);
    }

    public Path kernel() {
        return dir.resolve(KERNEL);
    }

    public Path initrd() {
        return dir.resolve(INITRD);
    }

    /** The kernel version the manifest names, if any. */
    public Optional<String> kernelVersion() {
        return manifest.kernelVersion();
    }

    /** The transports the image's init supports (manifest {@code transports}); serial if not listed. */
    public List<String> transports() {
        return manifest.supportedTransports();
    }

    /**
     * Loads and verifies the image for {@code arch} under {@code root} (in {@code <root>/<arch>}).
     *
     * @throws HostSetupException naming the missing file or the mismatching hash, and how to rebuild
     */
    public static GuestImage load(Path root, Arch arch) {
        return verify(root.resolve(arch.qemuName()), arch,
                "Build it with: ./qvm image build --arch " + arch.qemuName() + " --out " + root);
    }

    /**
     * Loads and verifies the image directory {@code dir} for {@code arch}: every file against
     * {@code SHA256SUMS} and the manifest ({@link ImageDirectory#verify}).
     *
     * @param fix the sentence that ends the error, saying what to do (e.g. how to rebuild)
     * @throws HostSetupException {@code IMAGE_INVALID}: no such directory, or its first problem, then {@code fix}
     */
    public static GuestImage verify(Path dir, Arch arch, String fix) {
        if (!Files.isDirectory(dir)) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "no guest image for " + arch.qemuName()
                    + " at " + dir + ". " + fix);
        }
        ImageDirectory.Verified v = ImageDirectory.verify(dir, arch);
        if (!v.ok()) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, v.problems().get(0) + ". " + fix);
        }
        return new GuestImage(arch, dir, v.manifest().orElseThrow(), v.sha256());
    }
}
