package io.qvm.internal.image;

import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import java.nio.file.Path;
import java.util.List;

/**
 * The guest image as a Maven artifact, the way the release pipeline installs it and a server's
 * build depends on it: {@code io.qvm:qvm-image:<version>} (a {@code pom}), with per guest
 * architecture a zip whose classifier is {@link Arch#qemuName()} and whose entries, at the zip's
 * root, are the image directory: {@value ImageDirectory#KERNEL}, {@value ImageDirectory#INITRAMFS},
 * {@value ImageDirectory#MANIFEST}, {@value ImageDirectory#SHA256SUMS} and the image's SBOM
 * {@value #SBOM}. In a local repository:
 * <pre>
 * &lt;repo&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;-&lt;arch&gt;.zip
 * </pre>
 * A server declares it as {@code <dependency><groupId>io.qvm</groupId><artifactId>qvm-image</artifactId>
 * <version>v</version><type>zip</type><classifier>x86_64</classifier></dependency>}.
 */
public final class ImageArtifact {

    public static final String GROUP_ID = "io.qvm";
    public static final String ARTIFACT_ID = "qvm-image";
    public static final String EXTENSION = "zip";
    /** The image's CycloneDX SBOM; shipped in the zip, not listed in the image's own {@code SHA256SUMS}. */
    public static final String SBOM = "sbom.cdx.json";
    /** The entries every image zip holds, at its root. */
    public static final List<String> REQUIRED = List.of(ImageDirectory.KERNEL, ImageDirectory.INITRAMFS,
            ImageDirectory.MANIFEST, ImageDirectory.SHA256SUMS);
    /**
     * The entries an image zip may hold besides {@link #REQUIRED}: the SBOM and the release's
     * signature of {@code SHA256SUMS} ({@link ImageSignature}).
     */
    public static final List<String> OPTIONAL = List.of(SBOM, ImageSignature.FILE);

    private ImageArtifact() {
    }

    /** {@code io.qvm:qvm-image:<version>:zip:<arch>}, the coordinates Maven (and its messages) use. */
    public static String coordinates(String version, Arch arch) {
        return GROUP_ID + ":" + ARTIFACT_ID + ":" + version + ":" + EXTENSION + ":" + arch.qemuName();
    }

    /** Where {@code repo} keeps the zip of {@code version} for {@code arch}. */
    public static Path zip(LocalMavenRepository repo, String version, Arch arch) {
        return repo.artifact(GROUP_ID, ARTIFACT_ID, version, arch.qemuName(), EXTENSION);
    }
}
