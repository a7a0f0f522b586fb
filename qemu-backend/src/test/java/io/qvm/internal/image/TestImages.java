package io.qvm.internal.image;

import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Small guest images with the real layout and sound checksums (a few bytes each, not a kernel),
 * and their zips as the release pipeline installs them into a Maven repository.
 */
public final class TestImages {

    private TestImages() {
    }

    /** An image directory for {@code arch} in {@code dir}; {@code tag} goes into the files so tests tell images apart. */
    public static Path write(Path dir, Arch arch, String tag) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(ImageDirectory.KERNEL), "kernel of " + tag);
        Files.writeString(dir.resolve(ImageDirectory.INITRAMFS), "initramfs of " + tag);
        Files.writeString(dir.resolve(ImageDirectory.MANIFEST), "{\"arch\": \"" + arch.id()
                + "\", \"transports\": [\"serial\"], \"kernel\": {\"version\": \"6.1.0-" + tag + "\"}, "
                + "\"crng_reseed\": true}\n");
        sums(dir);
        return dir;
    }

    /** Writes {@code SHA256SUMS} for the three files as they are now. */
    public static void sums(Path dir) throws IOException {
        StringBuilder sums = new StringBuilder();
        for (String f : ImageDirectory.FILES) {
            sums.append(Sha256.of(dir.resolve(f))).append("  ").append(f).append('\n');
        }
        Files.writeString(dir.resolve(ImageDirectory.SHA256SUMS), sums, StandardCharsets.UTF_8);
    }

    /** The entries a release's zip of {@code dir} holds: the four files and an SBOM. */
    public static Map<String, byte[]> entries(Path dir) throws IOException {
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (String f : List.of(ImageDirectory.KERNEL, ImageDirectory.INITRAMFS, ImageDirectory.MANIFEST,
                ImageDirectory.SHA256SUMS)) {
            out.put(f, Files.readAllBytes(dir.resolve(f)));
        }
        out.put(ImageArtifact.SBOM, "{\"bomFormat\": \"CycloneDX\"}".getBytes(StandardCharsets.UTF_8));
        return out;
    }

    /** A zip of {@code entries}, in their order. */
    public static Path zip(Path zip, Map<String, byte[]> entries) throws IOException {
        Files.createDirectories(zip.getParent());
        try (OutputStream file = Files.newOutputStream(zip); ZipOutputStream out = new ZipOutputStream(file)) {
            for (Map.Entry<String, byte[]> e : entries.entrySet()) {
                out.putNextEntry(new ZipEntry(e.getKey()));
                out.write(e.getValue());
                out.closeEntry();
            }
        }
        return zip;
    }

    /** The zip of {@code entries} installed in {@code repo} as {@code io.qvm:qvm-image:<version>:zip:<arch>}. */
    public static Path install(Path repo, String version, Arch arch, Map<String, byte[]> entries) throws IOException {
        return zip(ImageArtifact.zip(new LocalMavenRepository(repo, "a test's"), version, arch), entries);
    }
}
