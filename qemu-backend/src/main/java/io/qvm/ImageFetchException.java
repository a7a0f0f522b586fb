package io.qvm;

import java.util.Objects;

/**
 * The image could not be fetched from the remote image repository ({@code $QVM_IMAGE_REPOSITORY}),
 * or what was fetched is not what this backend pins. A {@link HostSetupException} with
 * {@code IMAGE_INVALID} like every image problem (a server reports the host unfit); {@link #reason()}
 * says which of the three cases it is, the message names the URL and what to do. Nothing fetched
 * is left behind: a refused or partial download is deleted before this is thrown.
 */
public final class ImageFetchException extends HostSetupException {
    private static final long serialVersionUID = 1L;

    /** Why nothing usable was fetched. */
    public enum Reason {
        /**
         * This backend pins no image for its version and architecture (a development build, a
         * SNAPSHOT, a backend built without the release's pins): it fetches nothing, fail closed.
         */
        NOT_PINNED,
        /** The repository could not be reached or did not serve the artifact (the status is in the message). */
        UNAVAILABLE,
        /** The bytes served are not the pinned ones (another hash, or more or fewer bytes): refused and deleted. */
        MISMATCH
    }

    private final Reason reason;

    public ImageFetchException(Reason reason, String message, Throwable cause) {
        super(Problem.IMAGE_INVALID, message, cause);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** Why nothing usable was fetched. */
    public Reason reason() {
        return reason;
    }
}
