package io.qvm.image;

/**
 * A pinned package could not be downloaded from the mirror (not found, an HTTP error, a
 * connection failure, more bytes than the lock says). Nothing partial is left in the cache.
 */
public final class PackageFetchException extends ImageException {
    private static final long serialVersionUID = 1L;

    public PackageFetchException(String message, Throwable cause) {
        super(message, cause);
    }
}
