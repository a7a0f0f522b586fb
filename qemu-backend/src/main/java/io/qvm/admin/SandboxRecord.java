package io.qvm.admin;

import io.qvm.internal.process.LogTail;
import io.qvm.internal.process.OwnerRecord;
import io.qvm.internal.process.ProcessInfo;
import io.qvm.internal.process.ProcessTable;
import io.qvm.internal.process.QemuIdentity;
import io.qvm.internal.process.SandboxState;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One sandbox recorded in a state directory ({@link SandboxStates}): its directory, its logs and
 * the record of its owner and QEMU. The files may vanish at any time (the sandbox stops); every
 * read then fails with an {@link IOException} or comes back empty.
 */
public final class SandboxRecord {

    /** The system property whose value new owner records name as {@link Owner#program()}. */
    public static final String PROGRAM_PROPERTY = OwnerRecord.PROGRAM_PROPERTY;

    private final SandboxState state;

    SandboxRecord(SandboxState state) {
        this.state = Objects.requireNonNull(state, "state");
    }

    public String id() {
        return state.id();
    }

    /** The sandbox's directory (logs, owner record, and whatever its owner keeps there). */
    public Path dir() {
        return state.dir();
    }

    /** The guest's serial console. */
    public Path consoleLog() {
        return state.consoleLog();
    }

    /** QEMU's standard error. */
    public Path stderrLog() {
        return state.stderrLog();
    }

    /** QEMU's standard output. */
    public Path stdoutLog() {
        return state.stdoutLog();
    }

    /** The sandbox's event log (one line per boot step and failure). */
    public Path eventsLog() {
        return state.eventsLog();
    }

    /**
     * Who owns the sandbox and which QEMU runs it.
     *
     * @param ownerPid the process that started it (a JVM with a backend, a CLI)
     * @param ownerStartedAt when that process started (null: unknown), to tell a reused pid
     * @param createdAt when the record was made
     * @param program what the owner said it is ({@link #PROGRAM_PROPERTY}; null: a library user)
     * @param qemuPid QEMU's pid once recorded (null: not yet)
     * @param qemuStartedAt when QEMU started (null: unknown)
     */
    public record Owner(long ownerPid, Instant ownerStartedAt, Instant createdAt, String program, Long qemuPid,
            Instant qemuStartedAt) {
    }

    /** The owner record. */
    public Owner owner() throws IOException {
        OwnerRecord r = state.owner();
        return new Owner(r.ownerPid(), r.ownerStartedAt(), r.createdAt(), r.ownerProgram(), r.qemuPid(),
                r.qemuStartedAt());
    }

    /** QEMU's pid: as recorded, else from its pid file (written before the record has it). */
    public OptionalLong qemuPid() {
        try {
            Long p = state.owner().qemuPid();
            if (p != null) {
                return OptionalLong.of(p);
            }
        } catch (IOException | RuntimeException e) {
            // the pid file may still name it
        }
        return state.pidFromPidFile();
    }

    /**
     * The live QEMU of this sandbox, if its pid is alive and proven to be it (its recorded start
     * instant and executable), else why not.
     *
     * @param process the live process, when it is proven this sandbox's QEMU
     * @param pid the pid looked at (empty: none known yet)
     * @param notIt why the process at that pid is not this sandbox's QEMU (empty when it may be)
     * @param unproven why the process at that pid, which may be this sandbox's QEMU, is not proven
     *     to be (empty when proven, when no process lives there, or when {@code notIt} says why)
     * @param recorded whether the owner record names the pid (else only the pid file does: a
     *     QEMU still starting)
     */
    public record QemuProcess(Optional<ProcessHandle> process, OptionalLong pid, Optional<String> notIt,
            Optional<String> unproven, boolean recorded) {
    }

    /** How much of a process the OS shows, for {@link #qemu(ProcessView)}. */
    public enum ProcessView {
        /** This host's view (on Linux its full command line). */
        HOST,
        /** Only the start instant and the executable, as Windows shows (no arguments). */
        START_AND_EXECUTABLE_ONLY
    }

    /** This sandbox's QEMU as {@link QemuProcess} tells, seen as this host shows processes. */
    public QemuProcess qemu() throws IOException {
        return qemu(ProcessView.HOST);
    }

    /** This sandbox's QEMU as {@link QemuProcess} tells, seen as {@code view} shows processes. */
    public QemuProcess qemu(ProcessView view) throws IOException {
        ProcessTable processes = view == ProcessView.HOST ? ProcessTable.system() : ProcessTable.windowsShaped();
        OwnerRecord record = state.owner();
        OptionalLong pid = record.qemuPid() != null ? OptionalLong.of(record.qemuPid()) : state.pidFromPidFile();
        if (pid.isEmpty()) {
            return new QemuProcess(Optional.empty(), pid, Optional.empty(), Optional.empty(), false);
        }
        Optional<ProcessInfo> p = processes.find(pid.getAsLong());
        if (p.isEmpty()) {
            return new QemuProcess(Optional.empty(), pid, Optional.empty(), Optional.empty(), record.qemuPid() != null);
        }
        Optional<String> not = QemuIdentity.notThatQemu(state, record, p.get());
        Optional<String> unproven = not.isPresent() ? Optional.empty() : QemuIdentity.unproven(record, p.get());
        boolean proven = not.isEmpty() && unproven.isEmpty();
        return new QemuProcess(proven ? Optional.of(p.get().handle()) : Optional.empty(), pid, not, unproven,
                record.qemuPid() != null);
    }

    /** At most the last {@code maxBytes} of {@code file}, as text ("" when it cannot be read). */
    public static String tail(Path file, int maxBytes) {
        return LogTail.tail(file, maxBytes);
    }

    /** Removes the sandbox's directory (its owner's job, or the reaper's). */
    public void delete() throws IOException {
        state.delete();
    }

    @Override
    public String toString() {
        return "sandbox " + id() + " at " + dir();
    }
}
