package io.qvm.internal.process;

import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.OptionalLong;

/**
 * One sandbox's directory in a {@link StateDirectory}: the files QEMU and qvm write for it.
 * Obtain it from {@link StateDirectory#create}, {@link StateDirectory#find} or
 * {@link StateDirectory#list}.
 */
public final class SandboxState {

    private final String id;
    private final Path dir;

    SandboxState(String id, Path dir) {
        this.id = id;
        this.dir = dir;
    }

    public String id() {
        return id;
    }

    public Path dir() {
        return dir;
    }

    public Path ownerFile() {
        return dir.resolve("owner.json");
    }

    /** Pass as QEMU's {@code -pidfile}. */
    public Path pidFile() {
        return dir.resolve("qemu.pid");
    }

    public Path stdoutLog() {
        return dir.resolve("qemu-stdout.log");
    }

    public Path stderrLog() {
        return dir.resolve("qemu-stderr.log");
    }

    /** Pass to QEMU as the console file ({@code -serial file:...} or {@code -chardev file,path=...}). */
    public Path consoleLog() {
        return dir.resolve("console.log");
    }

    /**
     * Pass to QEMU as the file of the init's events port ({@code qvm.events}): the boot phases and
     * the worker's exit status, which only the init writes.
     */
    public Path eventsLog() {
        return dir.resolve("events.log");
    }

    /** Reads and validates owner.json. */
    public OwnerRecord owner() throws IOException {
        try (InputStream in = Files.newInputStream(ownerFile())) {
            byte[] bytes = in.readNBytes(OwnerRecord.MAX_BYTES + 1);
            return OwnerRecord.parse(bytes);
        }
    }

    /**
     * Records QEMU's pid, start instant and executable path in owner.json (atomically), as the OS
     * reports them now, right after the launch: what a later reaper compares a live pid with.
     */
    public void recordQemu(ProcessHandle qemu) throws IOException {
        ProcessHandle.Info info = qemu.info();
        write(owner().withQemu(qemu.pid(), info.startInstant().orElse(null), info.command().orElse(null)));
    }

    /** The pid QEMU wrote to its pidfile, if the file exists and holds a positive integer. */
    public OptionalLong pidFromPidFile() {
        try (InputStream in = Files.newInputStream(pidFile())) {
            String s = new String(in.readNBytes(32), StandardCharsets.US_ASCII).strip();
            long pid = Long.parseLong(s);
            return pid > 0 ? OptionalLong.of(pid) : OptionalLong.empty();
        } catch (IOException | NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** Deletes this sandbox's directory and everything in it. */
    public void delete() throws IOException {
        FileTrees.delete(dir);
    }

    void write(OwnerRecord record) throws IOException {
        Path tmp = Files.createTempFile(dir, ".owner", ".tmp");
        try {
            Files.write(tmp, record.toJson());
            try {
                Files.move(tmp, ownerFile(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, ownerFile(), StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    @Override
    public String toString() {
        return "SandboxState[" + id + " at " + dir + "]";
    }
}
