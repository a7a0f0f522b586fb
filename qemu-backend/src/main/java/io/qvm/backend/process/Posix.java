package io.qvm.backend.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The few POSIX facts the backend needs (the current uid, whether a file system has owners), read without native code. */
public final class Posix {

    private static volatile Integer uid;

    private Posix() {}

    public static boolean supported(Path anyPath) {
        return anyPath.getFileSystem().supportedFileAttributeViews().contains("unix");
    }

    /**
     * The real uid of this process: the owner of {@code /proc/self} on Linux, else the owner of a
     * file we create.
     */
    public static int currentUid() {
        Integer u = uid;
        if (u != null) {
            return u;
        }
        try {
            Path self = Path.of("/proc/self");
            if (Files.isDirectory(self)) {
                u = (Integer) Files.getAttribute(self, "unix:uid");
            } else {
                Path probe = Files.createTempFile("qvm-uid", ".probe");
                try {
                    u = (Integer) Files.getAttribute(probe, "unix:uid");
                } finally {
                    Files.deleteIfExists(probe);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot determine the current uid", e);
        }
        uid = u;
        return u;
    }
}
