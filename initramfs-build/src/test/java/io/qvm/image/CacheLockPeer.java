package io.qvm.image;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Another process using the package cache, for {@link PackageStoreLockTest}: holds the lock file
 * {@code args[0]} through the real {@link CacheLock}, says so with {@code args[1]/held}, and lets
 * go once {@code args[1]/release} exists.
 */
public final class CacheLockPeer {

    private CacheLockPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path lock = Path.of(args[0]);
        Path dir = Path.of(args[1]);
        CacheLock.holding(lock, () -> {
            try {
                Files.writeString(dir.resolve("held"), "");
                while (!Files.exists(dir.resolve("release"))) {
                    Thread.sleep(50);
                }
                return null;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }
}
