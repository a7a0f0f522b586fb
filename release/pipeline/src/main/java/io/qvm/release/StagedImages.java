package io.qvm.release;

import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * The images of a release as staged, before anything is published:
 * {@code OUT/.staging-<random>/<version>/<arch>/} with {@code vmlinuz}, {@code initramfs.cpio.lz4},
 * {@code manifest.json}, {@code SHA256SUMS} and {@code sbom.cdx.json}, and the release's own
 * {@code SHA256SUMS} next to the architecture directories. {@link #root()} is an image root as the
 * backend reads one ({@code QemuVmBackend.builder().imageDir(root)}): the gate boots exactly these
 * files.
 *
 * @param version the release version
 * @param root the staged release directory, {@code OUT/.staging-<random>/<version>}
 * @param archs the architectures staged, in release order
 */
public record StagedImages(String version, Path root, List<Arch> archs) {

    public StagedImages {
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(root, "root");
        archs = List.copyOf(archs);
    }

    /** {@code root/<arch>}: one image directory. */
    public Path dir(Arch arch) {
        if (!archs.contains(arch)) {
            throw new IllegalArgumentException("no " + arch + " image staged (staged: " + archs + ")");
        }
        return root.resolve(arch.qemuName());
    }
}
