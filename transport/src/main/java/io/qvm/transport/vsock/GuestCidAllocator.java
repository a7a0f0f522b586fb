package io.qvm.transport.vsock;

import io.qvm.protocol.util.PrivateDirectory;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Hands out guest CIDs (≥ 3; 0–2 are reserved) that no other qvm on this host holds, across
 * processes: CID {@code n} is held by whoever holds an exclusive lock on {@code <dir>/cid-n.lock}.
 * The OS drops the lock when the holder dies, so a crashed process leaks nothing. Lock files are
 * never deleted (deleting one while another process has it open would let two holders lock two
 * different files of the same name).
 *
 * <p>A CID used by something that does not take these locks (another VM manager) is not seen:
 * QEMU then fails with "unable to set guest cid"; allocate the next one and retry.
 *
 * <p>Within one JVM the held lock files are tracked in a process-wide set and never opened twice:
 * closing a second channel on a locked file would release the JVM's lock on it (POSIX locks are
 * per process).
 *
 * <p>The lock directory (and, for {@link #defaults()}, the per-user directory above it, which may
 * sit in the world-writable {@code /tmp}) must be private ({@link PrivateDirectory}): created 0700 by this allocator, or
 * already a real directory owned by this uid with mode 0700. Anything else — a symlink planted
 * by another user, a directory of another owner, a shared mode — is refused, never followed or
 * repaired, and lock files are opened without following symlinks. Otherwise a root qvm could be
 * made to create files wherever a squatter's symlink points.
 */
public final class GuestCidAllocator {

    /** The first CID a guest may have. */
    public static final int FIRST_GUEST_CID = 3;

    private static final Set<Path> HELD_IN_THIS_JVM = ConcurrentHashMap.newKeySet();

    private final Path dir;
    private final Path privateFrom;
    private final int first;
    private final int last;

    /**
     * @param dir where the lock files live; every cooperating process must use the same one
     * @param first lowest CID to hand out, at least {@value #FIRST_GUEST_CID}
     * @param last highest CID to hand out
     */
    public GuestCidAllocator(Path dir, int first, int last) {
        this(dir, dir, first, last);
    }

    /** {@code privateFrom}: the first directory of the chain down to {@code dir} that must be private. */
    private GuestCidAllocator(Path dir, Path privateFrom, int first, int last) {
        this.dir = Objects.requireNonNull(dir, "dir").toAbsolutePath().normalize();
        this.privateFrom = privateFrom.toAbsolutePath().normalize();
        if (!this.dir.startsWith(this.privateFrom)) {
            throw new IllegalArgumentException(dir + " is not under " + privateFrom);
        }
        if (first < FIRST_GUEST_CID || last < first) {
            throw new IllegalArgumentException("CID range must satisfy " + FIRST_GUEST_CID + " <= first <= last, was "
                    + first + ".." + last);
        }
        this.first = first;
        this.last = last;
    }

    /**
     * The default: {@code $XDG_RUNTIME_DIR/qvm/vsock-cids} (or {@code <java.io.tmpdir>/qvm-<user>/vsock-cids})
     * and CIDs 3..65535; {@code qvm} (or {@code qvm-<user>}) and {@code vsock-cids} must be private.
     */
    public static GuestCidAllocator defaults() {
        String runtime = System.getenv("XDG_RUNTIME_DIR");
        Path base = runtime != null && !runtime.isEmpty() ? Path.of(runtime, "qvm")
                : Path.of(System.getProperty("java.io.tmpdir"), "qvm-" + System.getProperty("user.name"));
        return under(base);
    }

    /** The default layout under {@code base}: lock files in {@code base/vsock-cids}, both private. */
    static GuestCidAllocator under(Path base) {
        return new GuestCidAllocator(base.resolve("vsock-cids"), base, FIRST_GUEST_CID, 65535);
    }

    /** Where the lock files live. */
    public Path directory() {
        return dir;
    }

    /**
     * The lowest free CID in the range, held until {@link GuestCid#close()} (or this process ends).
     *
     * @throws IOException the directory is unusable, or every CID in the range is held
     */
    public GuestCid allocate() throws IOException {
        PrivateDirectory.ensureChain(privateFrom, dir);
        for (int cid = first; cid <= last; cid++) {
            Path file = dir.resolve("cid-" + cid + ".lock");
            if (!HELD_IN_THIS_JVM.add(file)) {
                continue;
            }
            GuestCid held = tryHold(cid, file);
            if (held != null) {
                return held;
            }
            HELD_IN_THIS_JVM.remove(file);
        }
        throw new IOException("every guest CID in " + first + ".." + last + " is held (lock files in " + dir
                + "); close sandboxes or widen the range");
    }

    private static GuestCid tryHold(int cid, Path file) throws IOException {
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS);
        try {
            FileLock lock = channel.tryLock();
            if (lock != null) {
                return new GuestCid(cid, file, channel, lock);
            }
        } catch (OverlappingFileLockException e) {
            // held by this JVM through a path we did not normalise the same way: taken
        }
        channel.close();
        return null;
    }

    /** One allocated CID; closing it frees the CID for others. Idempotent. */
    public static final class GuestCid implements AutoCloseable {
        private final int cid;
        private final Path lockFile;
        private final FileChannel channel;
        private final FileLock lock;
        private final AtomicBoolean closed = new AtomicBoolean();

        GuestCid(int cid, Path lockFile, FileChannel channel, FileLock lock) {
            this.cid = cid;
            this.lockFile = lockFile;
            this.channel = channel;
            this.lock = lock;
        }

        public int cid() {
            return cid;
        }

        public Path lockFile() {
            return lockFile;
        }

        @Override
        public void close() throws IOException {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            try {
                lock.release();
            } finally {
                try {
                    channel.close();
                } finally {
                    HELD_IN_THIS_JVM.remove(lockFile);
                }
            }
        }

        @Override
        public String toString() {
            return "GuestCid[" + cid + "]";
        }
    }
}
