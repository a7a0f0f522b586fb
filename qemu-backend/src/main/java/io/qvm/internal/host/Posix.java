package io.qvm.internal.host;

import io.qvm.HostSetupException;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.io.IOException;
import java.nio.file.Path;

/** The few POSIX facts the backend needs (the current uid, whether a file system has owners), read without native code. */
public final class Posix {

    private Posix() {}

    public static boolean supported(Path anyPath) {
        return anyPath.getFileSystem().supportedFileAttributeViews().contains("unix");
    }

    /**
     * The real uid of this process: the owner of {@code /proc/self} on Linux, else the owner of a
     * file we create ({@link PrivateDirectory#currentUid()}).
     */
    public static int currentUid() {
        return PrivateDirectory.currentUid();
    }

    /**
     * {@link PrivateDirectory#ensure}: {@code dir} created 0700, or accepted only if it already is
     * a private directory of ours; a refusal is the backend's {@link HostSetupException}
     * ({@link HostSetupException.Problem#HOST_SETUP_NEEDED}).
     *
     * @param elsewhere how to point qvm at another directory, e.g. "set QVM_STATE to another directory"
     */
    public static Path privateDirectory(Path dir, String elsewhere) throws IOException {
        try {
            return PrivateDirectory.ensure(dir);
        } catch (UnsafeDirectoryException e) {
            throw unsafe(e, elsewhere);
        }
    }

    /** {@code e} as a {@link HostSetupException} (HOST_SETUP_NEEDED), its message ending with {@code elsewhere}. */
    public static HostSetupException unsafe(UnsafeDirectoryException e, String elsewhere) {
        return new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED,
                e.getMessage() + " (" + elsewhere + ")", e);
    }
}
