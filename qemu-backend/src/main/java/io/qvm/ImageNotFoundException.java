package io.qvm;

import io.qvm.protocol.image.Arch;
import java.util.List;
import java.util.Objects;

/**
 * No guest image for the architecture in any place the backend searched (the directory given to
 * {@link QemuVmBackend.Builder#imageDir}, {@code $QVM_IMAGE_DIR}, the user cache, the local Maven
 * repository, a remote image repository; docs/library.md). A {@link HostSetupException} with
 * {@code IMAGE_INVALID} like every image problem (a server reports the host unfit);
 * {@link #searched()} lists the places in order with what each held, and the message ends with
 * the commands that fix it. An image that is there but damaged is a plain
 * {@code HostSetupException}: it is never reported as missing, nor skipped for another one.
 */
public final class ImageNotFoundException extends HostSetupException {
    private static final long serialVersionUID = 1L;

    /**
     * One place searched and what it held.
     *
     * @param place which place, as messages name it (e.g. "the user cache", "$QVM_IMAGE_DIR")
     * @param location the path or URL looked at (empty when the place was not set)
     * @param found what was there, e.g. "not set", "no such directory"
     */
    public record SearchedPlace(String place, String location, String found) {
        public SearchedPlace {
            Objects.requireNonNull(place, "place");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(found, "found");
        }

        @Override
        public String toString() {
            return place + (location.isEmpty() ? "" : " " + location) + ": " + found;
        }
    }

    private final Arch arch;
    private final List<SearchedPlace> searched;

    public ImageNotFoundException(Arch arch, List<SearchedPlace> searched, String message) {
        super(Problem.IMAGE_INVALID, message);
        this.arch = Objects.requireNonNull(arch, "arch");
        this.searched = List.copyOf(searched);
    }

    /** The guest architecture no image was found for. */
    public Arch arch() {
        return arch;
    }

    /** Every place searched, in the order searched. */
    public List<SearchedPlace> searched() {
        return searched;
    }
}
