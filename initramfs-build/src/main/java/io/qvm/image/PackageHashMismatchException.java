package io.qvm.image;

/**
 * A downloaded (or cached) .deb whose SHA-256 is not the one the lock pins. Nothing of it is
 * kept. Either the mirror serves something else (a broken or hostile mirror: use another) or the
 * registry legitimately rebuilt the package (refresh the lock and review the diff).
 */
public final class PackageHashMismatchException extends ImageException {
    private static final long serialVersionUID = 1L;

    private final String pkg;
    private final String expected;
    private final String actual;

    public PackageHashMismatchException(String pkg, String source, String expected, String actual) {
        super("package " + pkg + " from " + source + " does not match the lock: expected sha256 "
                + expected + ", actual " + actual + ". Nothing was kept. If the registry "
                + "legitimately changed, refresh the lock with " + PackageLock.REFRESH_COMMAND
                + " and review the diff; otherwise the mirror is serving other bytes: use another "
                + "(" + DebianMirrors.ARCHIVE_ENV + ", " + DebianMirrors.SECURITY_ENV + ").");
        this.pkg = pkg;
        this.expected = expected;
        this.actual = actual;
    }

    public String pkg() {
        return pkg;
    }

    public String expected() {
        return expected;
    }

    public String actual() {
        return actual;
    }
}
