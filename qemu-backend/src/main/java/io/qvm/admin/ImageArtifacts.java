package io.qvm.admin;

import io.qvm.HostSetupException;
import io.qvm.internal.image.GuestImage;
import io.qvm.internal.image.ImageArtifact;
import io.qvm.internal.image.ImageSignature;
import io.qvm.internal.image.LocalMavenRepository;
import io.qvm.internal.image.PinnedImages;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The guest image as it is published (adr/0011): a Maven artifact {@code io.qvm:qvm-image:<version>}
 * with one zip per architecture holding the image directory's files, optionally signed
 * ({@value #SIGNATURE_FILE} over {@code SHA256SUMS}), and pinned by each library version (the
 * SHA-256 and size of each zip, {@value #PINS_FILE}). What a pipeline that publishes images (qvm's
 * own, or a team's mirror) needs to write exactly what the backend reads.
 */
public final class ImageArtifacts {

    public static final String GROUP_ID = ImageArtifact.GROUP_ID;
    public static final String ARTIFACT_ID = ImageArtifact.ARTIFACT_ID;
    /** The image's CycloneDX SBOM, in the image directory and the zip. */
    public static final String SBOM_FILE = ImageArtifact.SBOM;
    /** The files every image zip holds. */
    public static final List<String> REQUIRED_FILES = ImageArtifact.REQUIRED;
    /** The files an image zip may hold besides. */
    public static final List<String> OPTIONAL_FILES = ImageArtifact.OPTIONAL;
    /** The detached OpenPGP signature of {@code SHA256SUMS}. */
    public static final String SIGNATURE_FILE = ImageSignature.FILE;
    /** The pin file a release writes. */
    public static final String PINS_FILE = PinnedImages.FILE;
    /** Where the library's jar carries the pin file. */
    public static final String PINS_RESOURCE = PinnedImages.RESOURCE;

    private ImageArtifacts() {
    }

    /**
     * Verifies the image directory {@code dir} of {@code arch}: every file against
     * {@code SHA256SUMS} and the manifest.
     *
     * @param fix the sentence that ends the error, saying what to do
     * @throws HostSetupException ({@code IMAGE_INVALID}) no such directory, or its first problem
     */
    public static GuestImages.Image verify(Path dir, Arch arch, String fix) {
        GuestImage image = GuestImage.verify(dir, arch, fix);
        return new GuestImages.Image(image.arch(), image.dir(), image.kernel(), image.kernelVersion(), image.sha256(),
                "EXPLICIT", "the image directory " + dir);
    }

    /**
     * Checks that the image directory {@code dir} of {@code arch} verifies and carries a valid
     * signature by the armoured public key in {@code publicKey}, as a backend given that key does.
     *
     * @throws HostSetupException the image does not verify, or its signature is missing or invalid
     * @throws IllegalArgumentException {@code publicKey} holds no OpenPGP public key
     */
    public static void checkSignature(Path dir, Arch arch, Path publicKey, String fix) {
        ImageSignature.trusting(publicKey).check(GuestImage.verify(dir, arch, fix));
    }

    /** One image zip's pin: its SHA-256 (lowercase hex) and size in bytes. */
    public record Pin(String sha256, long size) {
        public Pin {
            Objects.requireNonNull(sha256, "sha256");
        }
    }

    /** The pin file's text for {@code version}, as the backend reads it. */
    public static String formatPins(String version, Map<Arch, Pin> pins, String source) {
        Map<Arch, PinnedImages.Pin> p = new LinkedHashMap<>();
        pins.forEach((a, pin) -> p.put(a, new PinnedImages.Pin(pin.sha256(), pin.size())));
        return new PinnedImages(version, p, source).format();
    }

    /**
     * The local Maven repository the backend looks in: {@code -Dmaven.repo.local},
     * {@code $QVM_MAVEN_REPO}, {@code <localRepository>} of {@code ~/.m2/settings.xml}, else
     * {@code ~/.m2/repository}.
     */
    public static Path localRepository() {
        return LocalMavenRepository.system().root();
    }

    /** Where Maven keeps {@code groupId:artifactId:version[:classifier]} with {@code extension} under {@code repo}. */
    public static Path artifactPath(Path repo, String groupId, String artifactId, String version, String classifier,
            String extension) {
        return new LocalMavenRepository(repo, "the given").artifact(groupId, artifactId, version, classifier, extension);
    }
}
