package io.qvm.image;

/**
 * A Debian package whose archive would write outside its extraction directory (an absolute
 * name, a {@code ..} component, a hard link to a file outside it, a relative symlink that climbs
 * above it, an entry written through a symlink) or holds an entry the image never needs (a
 * device node, a FIFO). The extraction fails closed: nothing of the package is kept. A package
 * whose SHA-256 matched the lock and still trips this was built hostile or broken: do not
 * refresh the lock around it, report it.
 */
public final class UnsafePackageException extends ImageException {
    private static final long serialVersionUID = 1L;

    private final String entry;

    public UnsafePackageException(String pkg, String entry, String why) {
        super("refusing to extract " + pkg + ": entry '" + entry + "' " + why
                + ". Nothing of the package was kept; a pinned package that does this is hostile "
                + "or broken, do not work around it.");
        this.entry = entry;
    }

    /** The archive member's name, as the package wrote it. */
    public String entry() {
        return entry;
    }
}
