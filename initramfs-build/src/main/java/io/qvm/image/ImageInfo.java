package io.qvm.image;

import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.image.ImageManifest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads and verifies a built image directory ({@code <out>/<arch>/}).
 *
 * @param dir       the image directory
 * @param manifest  its manifest.json
 * @param problems  empty when every file matches SHA256SUMS and the manifest
 */
public record ImageInfo(Path dir, ImageManifest manifest, List<String> problems) {

    public boolean ok() {
        return problems.isEmpty();
    }

    /** The repository root: the nearest directory up from the working directory with initramfs-build/. */
    public static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        for (Path q = p; q != null; q = q.getParent()) {
            if (Files.isDirectory(q.resolve("initramfs-build")) && Files.isRegularFile(q.resolve("pom.xml"))) {
                return q;
            }
        }
        return p;
    }

    /** {@code $QVM_IMAGE_DIR}, else {@code out/image} under the repository root. */
    public static Path defaultOutDir() {
        String env = System.getenv("QVM_IMAGE_DIR");
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        return repoRoot().resolve("out/image");
    }

    /** Reads {@code <out>/<arch>/} and checks it with {@link ImageDirectory#verify}. */
    public static ImageInfo read(Path outDir, Arch arch) {
        Path dir = outDir.resolve(arch.id());
        Path manifestFile = dir.resolve(ImageDirectory.MANIFEST);
        if (!Files.isRegularFile(manifestFile)) {
            throw new ImageException("no image for " + arch + " in " + dir + ": build it with "
                    + "./qvm image build --arch " + arch.id());
        }
        ImageDirectory.Verified v = ImageDirectory.verify(dir, arch);
        ImageManifest manifest = v.manifest().orElseThrow(() -> new ImageException("cannot read " + manifestFile
                + ": " + v.problems()));
        return new ImageInfo(dir, manifest, v.problems());
    }
}
