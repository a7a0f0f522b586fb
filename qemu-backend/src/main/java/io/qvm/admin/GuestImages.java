package io.qvm.admin;

import io.qvm.HostSetupException;
import io.qvm.internal.image.GuestImage;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/** The guest image a sandbox boots: where it is and whether it verifies. */
public final class GuestImages {

    private GuestImages() {
    }

    /**
     * A verified guest image.
     *
     * @param dir the image directory ({@code <root>/<arch>})
     * @param kernel the kernel file in it
     * @param kernelVersion the kernel's version, as its manifest says
     * @param sha256 every file's SHA-256, by file name
     * @param source where the image was found: {@code EXPLICIT} (a directory given by the caller),
     *     {@code ENVIRONMENT} ({@code $QVM_IMAGE_DIR}), {@code USER_CACHE}, {@code MAVEN_REPOSITORY}
     *     or {@code REMOTE_REPOSITORY}
     * @param description where it came from, in words
     */
    public record Image(Arch arch, Path dir, Path kernel, Optional<String> kernelVersion, Map<String, String> sha256,
            String source, String description) {
        public Image {
            Objects.requireNonNull(arch, "arch");
            sha256 = Map.copyOf(sha256);
        }
    }

    /**
     * The image of {@code arch} under {@code root}, every file's checksum verified.
     *
     * @throws HostSetupException ({@code IMAGE_MISSING}) there is none, or it does not verify
     */
    public static Image verify(Path root, Arch arch) {
        GuestImage image = GuestImage.load(root, arch);
        return new Image(image.arch(), image.dir(), image.kernel(), image.kernelVersion(), image.sha256(),
                "EXPLICIT", "the image directory " + root);
    }
}
