package io.qvm.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Objects;
import java.util.Optional;

/**
 * An append-only log file that never grows past {@code maxBytes}: a write that would pass the cap
 * first moves {@code file} to {@code file.1} (replacing the older one) and starts a new, empty
 * {@code file}. At most {@code 2 × maxBytes} of disk, whatever runs for however long; a write
 * bigger than the cap is split across files, so its start may be rotated away.
 *
 * <pre>
 *  supervisor.log     the newest bytes, &lt;= maxBytes
 *  supervisor.log.1   the bytes before them, &lt;= maxBytes (older ones are gone)
 * </pre>
 *
 * A detached {@code qvm up} supervisor ({@link DetachLauncher}) runs for days: it writes its
 * stdout and stderr here ({@link #installAsStdio}); when its sandbox is up the log moves into
 * the sandbox's state directory with {@link #moveTo}. If a rotation cannot move the file (its
 * directory is gone), the file is emptied instead, so the cap holds anyway. Thread-safe.
 */
public final class RotatingLog extends OutputStream {

    /** A detached supervisor's log: 1 MiB, then {@code supervisor.log.1}. */
    public static final long SUPERVISOR_MAX_BYTES = 1 << 20;
    /** The system property naming the file a supervisor's stdout and stderr go to (set by {@link DetachLauncher}). */
    static final String PROPERTY = "qvm.supervisor.log";

    private static volatile RotatingLog stdio;

    private final long maxBytes;
    private Path file;
    private FileChannel channel;
    private long size;
    private long rotations;

    /** Opens (appends to) {@code file}; an existing file over the cap is rotated at the first write. */
    public RotatingLog(Path file, long maxBytes) throws IOException {
        if (maxBytes < 1) {
            throw new IllegalArgumentException("maxBytes must be positive, got " + maxBytes);
        }
        this.file = Objects.requireNonNull(file, "file");
        this.maxBytes = maxBytes;
        open();
    }

    private void open() throws IOException {
        channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        size = channel.size();
    }

    /** The rotated file of {@code file}: {@code file.1}. */
    public static Path previous(Path file) {
        return file.resolveSibling(file.getFileName() + ".1");
    }

    public synchronized Path file() {
        return file;
    }

    /** How many times the log was rotated. */
    public synchronized long rotations() {
        return rotations;
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length);
        while (len > 0) {
            if (size >= maxBytes) {
                rotate();
            }
            int n = (int) Math.min(len, maxBytes - size);
            ByteBuffer buf = ByteBuffer.wrap(b, off, n);
            while (buf.hasRemaining()) {
                channel.write(buf);
            }
            size += n;
            off += n;
            len -= n;
        }
    }

    private void rotate() throws IOException {
        rotations++;
        try {
            Files.move(file, previous(file), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            // cannot keep the older bytes (the directory is gone, say): drop them rather than pass the cap
            channel.truncate(0);
            size = 0;
            return;
        }
        channel.close();
        open();
    }

    /**
     * Moves the log (and its {@code .1}) to {@code target} and writes there from now on.
     *
     * @throws IOException the move failed (e.g. another file system); the log stays where it was
     */
    public synchronized void moveTo(Path target) throws IOException {
        Files.move(file, target, StandardCopyOption.ATOMIC_MOVE);
        Path old = previous(file);
        if (Files.exists(old)) {
            try {
                Files.move(old, previous(target), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException | RuntimeException e) {
                Files.deleteIfExists(old);
            }
        }
        file = target; // the open channel is the same file, now under its new name
    }

    @Override
    public synchronized void close() throws IOException {
        channel.close();
    }

    /**
     * Sends this process's {@code System.out} and {@code System.err} to a {@link RotatingLog} on
     * {@code file} of {@link #SUPERVISOR_MAX_BYTES}; called first thing by a detached supervisor,
     * before anything captured the old streams. What the JVM itself writes to descriptors 1 and 2
     * (a fatal error) still goes to the file the launcher opened for it.
     */
    static RotatingLog installAsStdio(Path file) throws IOException {
        RotatingLog log = new RotatingLog(file, SUPERVISOR_MAX_BYTES);
        PrintStream ps = new PrintStream(log, true, StandardCharsets.UTF_8);
        System.setOut(ps);
        System.setErr(ps);
        stdio = log;
        return log;
    }

    /** The log {@link #installAsStdio} installed in this process, if any. */
    static Optional<RotatingLog> stdio() {
        return Optional.ofNullable(stdio);
    }
}
