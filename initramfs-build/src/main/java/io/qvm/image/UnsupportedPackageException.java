package io.qvm.image;

/**
 * A Debian package the pure-Java extractor cannot read: not an {@code ar} archive of format 2.0,
 * no {@code data.tar*} member, or a member compressed with a codec that needs native code
 * ({@code data.tar.zst}: zstd has no pure-Java decoder, and the build takes no JNI). The message
 * names the package and the member; pin a build of the package compressed with xz or gzip
 * (everything Debian bookworm ships is xz).
 */
public final class UnsupportedPackageException extends ImageException {
    private static final long serialVersionUID = 1L;

    public UnsupportedPackageException(String message) {
        super(message);
    }
}
