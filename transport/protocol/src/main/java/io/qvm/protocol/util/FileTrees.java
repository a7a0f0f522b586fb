package io.qvm.protocol.util;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Recursive delete, the one the image builder, the backend's state and template directories and
 * the CLI share. A symlink is deleted as a link, never followed; what vanishes meanwhile (another
 * process cleaning up the same tree) is not an error.
 */
public final class FileTrees {

    private FileTrees() {
    }

    /** Deletes {@code dir} recursively without following symlinks; a missing dir is fine. */
    public static void delete(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.deleteIfExists(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                if (e instanceof NoSuchFileException) {
                    return FileVisitResult.CONTINUE;
                }
                throw e;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                if (e != null && !(e instanceof NoSuchFileException)) {
                    throw e;
                }
                Files.deleteIfExists(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** {@link #delete} for best-effort cleanup (scratch and temporary directories): never throws; null is fine. */
    public static void deleteQuietly(Path dir) {
        if (dir == null) {
            return;
        }
        try {
            delete(dir);
        } catch (IOException ignored) {
            // best effort: a leftover directory is harmless
        }
    }
}
