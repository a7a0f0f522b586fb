package io.qvm.internal.image;

import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.util.List;
import java.util.Objects;

/**
 * No guest image for the architecture in any place {@link ImageResolver} searched. A
 * {@link HostSetupException} with {@code IMAGE_INVALID} like every image problem (a server reports
 * the host unfit); {@link #searched()} lists the places in order with what each held, and the
 * message ends with the commands that fix it. An image that is there but damaged is a plain
 * {@code HostSetupException}: it is never reported as missing, nor skipped for another one.
 */
public final class ImageNotFoundException extends HostSetupException {
    private static final long serialVersionUID = 1L;

    private final Arch arch;
    private final transient List<ImageResolver.Place> searched;

    ImageNotFoundException(Arch arch, List<ImageResolver.Place> searched, String message) {
        super(Problem.IMAGE_INVALID, message);
        this.arch = Objects.requireNonNull(arch, "arch");
        this.searched = List.copyOf(searched);
    }

    /** The guest architecture no image was found for. */
    public Arch arch() {
        return arch;
    }

    /** Every place searched, in the order searched. */
    public List<ImageResolver.Place> searched() {
        return searched == null ? List.of() : searched;
    }
}
