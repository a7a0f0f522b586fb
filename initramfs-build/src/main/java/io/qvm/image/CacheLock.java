package io.qvm.image;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One writer at a time for one entry of the package cache, across threads and processes: two
 * image builds sharing {@code $QVM_CACHE} (two checkouts, a build beside {@code qvm release})
 * must not download into, delete or extract over what the other is using. A lock per entry: a
 * lock in this JVM first (the OS lock belongs to the process, so two threads would not exclude
 * each other by it, and the second would get an {@link java.nio.channels.OverlappingFileLockException}),
 * then {@link FileChannel#lock()} on a file under {@code locks/} (fcntl on POSIX, LockFileEx on
 * Windows), released with the process should it die. The lock files stay; they are empty.
 */
final class CacheLock {

    private static final ConcurrentHashMap<Path, ReentrantLock> IN_THIS_JVM = new ConcurrentHashMap<>();

    private CacheLock() {
    }

    /** Runs {@code body} holding the lock named by {@code lockFile} (created with its directory). */
    static <T> T holding(Path lockFile, Supplier<T> body) {
        Path key = key(lockFile);
        ReentrantLock local = IN_THIS_JVM.computeIfAbsent(key, k -> new ReentrantLock());
        if (local.isHeldByCurrentThread()) {
            throw new IllegalStateException("the cache lock " + key + " is already held by this thread");
        }
        local.lock();
        try (FileChannel ch = openOrNull(key)) {
            if (ch == null) {
                // a cache this user may only read (a shared, prepared one): nothing is written to
                // it, so there is nothing to take turns on; the body fails by itself if it must write
                return body.get();
            }
            FileLock held;
            try {
                held = ch.lock();
            } catch (IOException noLocks) {
                // a file system without locks (ENOLCK on some NFS and 9p mounts): as before
                // this lock existed, and the .done markers still guard against half a tree
                return body.get();
            }
            try (held) {
                return body.get();
            }
        } catch (IOException e) {
            throw new ImageException("cannot release the lock " + key + " in the package cache: " + e, e);
        } finally {
            local.unlock();
        }
    }

    /** The lock file, open for writing; null where it cannot be created (its directory was made by {@link #key}). */
    private static FileChannel openOrNull(Path key) {
        try {
            return FileChannel.open(key, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        } catch (IOException | UnsupportedOperationException readOnly) {
            return null;
        }
    }

    /** The lock's identity: the real path of its directory where it exists (symlinked caches meet). */
    private static Path key(Path lockFile) {
        Path abs = lockFile.toAbsolutePath().normalize();
        try {
            Files.createDirectories(abs.getParent());
            return abs.getParent().toRealPath().resolve(abs.getFileName());
        } catch (IOException notYet) {
            return abs;
        }
    }
}
