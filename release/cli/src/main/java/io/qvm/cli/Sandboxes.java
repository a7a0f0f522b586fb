package io.qvm.cli;

import io.qvm.admin.SandboxRecord;
import io.qvm.admin.SandboxStates;
import io.qvm.cli.control.ReadyFile;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The sandboxes of a state directory as the CLI sees them: each sandbox's owner record, its
 * {@code ready.json} (written by a CLI supervisor) and whether the processes named there live.
 *
 * <table>
 * <caption>state</caption>
 * <tr><td>{@code running}</td><td>ready.json present, its supervisor and QEMU alive (for a fresh-per-render
 *     session, which has no QEMU of its own: its supervisor alive): reachable through its control socket</td></tr>
 * <tr><td>{@code pooled}</td><td>a sandbox of a running fresh-per-render {@code qvm up} session (owned by its
 *     supervisor, ready for or rendering one document); it stops with its document or its session</td></tr>
 * <tr><td>{@code booting}</td><td>owned by a live {@code qvm} process that has not written ready.json yet</td></tr>
 * <tr><td>{@code unmanaged}</td><td>owned by a live process that is not the qvm CLI (a program using the library)</td></tr>
 * <tr><td>{@code exiting}</td><td>ready.json present, owner alive, QEMU gone: stopping</td></tr>
 * <tr><td>{@code stale}</td><td>the owner is gone: the next backend start (or {@code qvm down}) reaps it</td></tr>
 * <tr><td>{@code unreadable}</td><td>owner.json missing or invalid</td></tr>
 * </table>
 */
final class Sandboxes {

    /**
     * One sandbox. {@code ready} and {@code owner} are null when absent/unreadable; {@code session}
     * is the qvm up session a {@code pooled} sandbox belongs to.
     */
    record Entry(SandboxRecord state, SandboxRecord.Owner owner, ReadyFile ready, String status, boolean ownerAlive,
            boolean ownerIsCli, Long qemuPid, boolean qemuAlive, String session) {

        String id() {
            return state.id();
        }

        boolean running() {
            return status.equals("running");
        }

        /** Seconds since QEMU (or, before it, the record) started; null if unknown. */
        Long uptimeSeconds(Instant now) {
            Instant start = owner == null ? null : owner.qemuStartedAt() != null ? owner.qemuStartedAt() : owner.createdAt();
            return start == null ? null : Math.max(0, Duration.between(start, now).toSeconds());
        }

        /** {@code fresh-per-render} or {@code reused} for a qvm up session; null otherwise. */
        String mode() {
            return ready == null ? null : ready.mode() == null ? io.qvm.cli.control.ControlTarget.REUSED : ready.mode();
        }

        String ownerKind() {
            if (session != null) {
                return "session";
            }
            if (ready != null) {
                return ready.detached() ? "supervisor" : "foreground";
            }
            return ownerIsCli ? "cli" : owner == null ? "unknown" : "library";
        }
    }

    private Sandboxes() {
    }

    static List<Entry> list(SandboxStates states) throws IOException {
        List<Entry> described = new ArrayList<>();
        for (SandboxRecord s : states.list()) {
            described.add(describe(s));
        }
        List<Entry> out = new ArrayList<>();
        for (Entry e : described) {
            out.add(inSession(e, described));
        }
        return out;
    }

    static Optional<Entry> find(SandboxStates states, String id) {
        if (states.find(id).isEmpty()) {
            return Optional.empty();
        }
        try {
            return list(states).stream().filter(e -> e.id().equals(id)).findFirst();
        } catch (IOException e) {
            return states.find(id).map(Sandboxes::describe);
        }
    }

    /** {@code e} as a {@code pooled} sandbox if a running fresh-per-render session's supervisor owns it. */
    private static Entry inSession(Entry e, List<Entry> all) {
        if (e.ready() != null || e.owner() == null || !e.ownerAlive()) {
            return e;
        }
        for (Entry s : all) {
            if (s.running() && s.ready().freshPerRender() && s.owner() != null
                    && s.owner().ownerPid() == e.owner().ownerPid() && s != e) {
                return new Entry(e.state(), e.owner(), null, "pooled", true, e.ownerIsCli(), e.qemuPid(),
                        e.qemuAlive(), s.id());
            }
        }
        return e;
    }

    static Entry describe(SandboxRecord s) {
        SandboxRecord.Owner owner;
        try {
            owner = s.owner();
        } catch (IOException | RuntimeException e) {
            return new Entry(s, null, ReadyFile.read(s.dir()).orElse(null), "unreadable", false, false, null, false, null);
        }
        ReadyFile ready = ReadyFile.read(s.dir()).orElse(null);
        Optional<ProcessHandle> ownerHandle = alive(owner.ownerPid(), owner.ownerStartedAt());
        boolean ownerAlive = ownerHandle.isPresent();
        boolean ownerIsCli = ownerHandle.map(h -> isQvmCli(h, owner)).orElse(false);
        Long qemuPid = owner.qemuPid() != null ? owner.qemuPid()
                : s.qemuPid().isPresent() ? Long.valueOf(s.qemuPid().getAsLong()) : null;
        boolean qemuAlive = qemuPid != null && alive(qemuPid, owner.qemuStartedAt()).isPresent();
        String status;
        if (!ownerAlive) {
            status = "stale";
        } else if (ready != null) {
            status = qemuAlive || ready.freshPerRender() ? "running" : "exiting";
        } else {
            status = ownerIsCli ? "booting" : "unmanaged";
        }
        return new Entry(s, owner, ready, status, ownerAlive, ownerIsCli, qemuPid, qemuAlive, null);
    }

    /** The process {@code pid} if it is alive and (when recorded) started at {@code startedAt} ± 1 s. */
    static Optional<ProcessHandle> alive(long pid, Instant startedAt) {
        Optional<ProcessHandle> h = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
        if (h.isEmpty() || startedAt == null) {
            return h;
        }
        Optional<Instant> actual = h.get().info().startInstant();
        if (actual.isPresent() && Duration.between(startedAt, actual.get()).abs().compareTo(Duration.ofSeconds(1)) > 0) {
            return Optional.empty(); // the pid was reused
        }
        return h;
    }

    /** {@link SandboxRecord.Owner#program()} of a sandbox the qvm CLI owns. */
    static final String CLI_PROGRAM = "qvm-cli";

    /**
     * Whether {@code h}, the live owner recorded in {@code record}, is the qvm CLI: the record says
     * so ({@link #CLI_PROGRAM}, written by the owner itself; the only way where the OS gives no
     * command line, as on Windows), or its command line does.
     */
    static boolean isQvmCli(ProcessHandle h, SandboxRecord.Owner record) {
        return CLI_PROGRAM.equals(record.program()) || isQvmCli(h);
    }

    /** Whether a process runs {@code io.qvm.cli.QvmCli} (its command line says so). */
    static boolean isQvmCli(ProcessHandle h) {
        return h.pid() == ProcessHandle.current().pid()
                || h.info().commandLine().map(c -> c.contains(QvmCli.class.getName())).orElse(false)
                || h.info().arguments().map(a -> List.of(a).contains(QvmCli.class.getName())).orElse(false);
    }
}
