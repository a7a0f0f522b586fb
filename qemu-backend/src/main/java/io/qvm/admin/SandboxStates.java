package io.qvm.admin;

import io.qvm.SandboxException;
import io.qvm.internal.process.CgroupTree;
import io.qvm.internal.process.ReapReport;
import io.qvm.internal.process.SandboxState;
import io.qvm.internal.process.SocketPaths;
import io.qvm.internal.process.StaleSandboxReaper;
import io.qvm.internal.process.StateDirectory;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The sandboxes recorded in one state directory (what {@code qvm ps} lists): each sandbox that is
 * starting or running has a directory there naming its owner process and its QEMU, removed when it
 * stops. A sandbox whose owner died (a JVM killed with SIGKILL) stays until {@link #reap} stops
 * its QEMU, which it does only after proving the pid is that QEMU.
 */
public final class SandboxStates {

    private final StateDirectory states;

    private SandboxStates(StateDirectory states) {
        this.states = states;
    }

    /** The state directory {@code root} (nothing is created until a sandbox starts). */
    public static SandboxStates at(Path root) {
        return new SandboxStates(StateDirectory.at(root));
    }

    public Path root() {
        return states.root();
    }

    /** Every sandbox recorded here, in id order. */
    public List<SandboxRecord> list() throws IOException {
        return states.list().stream().map(SandboxRecord::new).toList();
    }

    /** The sandbox {@code id}, if recorded here (an invalid id is never found). */
    public Optional<SandboxRecord> find(String id) {
        if (!isValidId(id)) {
            return Optional.empty();
        }
        return states.find(id).map(SandboxRecord::new);
    }

    /** A fresh random sandbox id. */
    public static String newId() {
        return StateDirectory.newSandboxId();
    }

    /** Whether {@code id} has the form of a sandbox id (lowercase hex, as {@link #newId} makes). */
    public static boolean isValidId(String id) {
        try {
            StateDirectory.checkSandboxId(id);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * Creates the record of a sandbox that some process other than a backend supervises (a CLI
     * session), owned by this process: the caller removes it with {@link SandboxRecord#delete()}.
     *
     * @param what what runs there in place of a QEMU binary (shown by {@code qvm ps})
     * @param socketDirectory its socket directory ({@link #socketDirectory}), recorded so that the
     *     reaper removes it with the record; empty when it has none
     * @throws java.nio.file.FileAlreadyExistsException the sandbox already exists
     */
    public SandboxRecord create(String id, String what, Optional<Path> socketDirectory) throws IOException {
        SocketPaths sockets = socketDirectory.map(d -> new SocketPaths(d, d.resolve("qmp.sock"),
                d.resolve("worker.sock"))).orElse(null);
        return new SandboxRecord(states.create(id, what, sockets));
    }

    /**
     * Creates sandbox {@code id}'s socket directory under {@code runtimeRoot} (private to this user).
     *
     * @throws IllegalArgumentException its socket paths would be too long
     */
    public static Path createSocketDirectory(Path runtimeRoot, String id) throws IOException {
        return SocketPaths.forSandbox(runtimeRoot, id).createDirectories().dir();
    }

    /** What happened to one sandbox the reaper looked at. */
    public enum Outcome {
        /** Owner gone, its QEMU proven and killed, state and sockets removed. */
        KILLED_AND_REMOVED(true),
        /** Owner gone and no QEMU of this sandbox alive; state removed. */
        REMOVED(true),
        /** The owner process is alive: not stale. */
        SKIPPED_OWNER_ALIVE(false),
        /** Recorded by another host (a shared home directory?): its pids mean nothing here. */
        SKIPPED_OTHER_HOST(false),
        /** The record cannot be read: left alone. */
        SKIPPED_UNREADABLE(false),
        /** Its QEMU pid is alive but cannot be proven to be that QEMU: not killed. */
        SKIPPED_UNVERIFIABLE(false),
        /** Killing or deleting failed; see the reason. */
        FAILED(false);

        private final boolean removed;

        Outcome(boolean removed) {
            this.removed = removed;
        }

        /** Whether the sandbox's record was removed. */
        public boolean removed() {
            return removed;
        }
    }

    /** One sandbox the reaper looked at: what it did and why, in words (pids, commands, instants). */
    public record Reaped(String sandboxId, Outcome outcome, String reason) {
    }

    /**
     * Stops the QEMUs of sandboxes whose owner is gone and removes their records, sockets under
     * {@code runtimeRoot} and (where the host has cgroup v2) cgroups.
     *
     * @throws io.qvm.HostSetupException the state directory is not a private directory of this
     *     user: nothing in it was read, nothing stopped or deleted
     */
    public List<Reaped> reap(Path runtimeRoot) {
        return reap(runtimeRoot, true);
    }

    /** {@link #reap(Path)}, leaving cgroups alone when {@code cgroups} is false. */
    public List<Reaped> reap(Path runtimeRoot, boolean cgroups) {
        try {
            return reaped(new StaleSandboxReaper(states, runtimeRoot, cgroups ? CgroupTree.system() : null).reap());
        } catch (IOException e) {
            throw new SandboxException("cannot read the state directory " + states.root() + ": " + e.getMessage(), e);
        }
    }

    static List<Reaped> reaped(ReapReport r) {
        return r.entries().stream().map(e -> new Reaped(e.sandboxId(), Outcome.valueOf(e.outcome().name()), e.reason()))
                .toList();
    }

    /** The directory sandbox sockets go under by default: short, private to this user. */
    public static Path defaultRuntimeRoot() {
        return SocketPaths.defaultRuntimeRoot();
    }

    /** The longest socket path the OS takes, in bytes. */
    public static final int MAX_SOCKET_PATH_BYTES = SocketPaths.MAX_SOCKET_PATH_BYTES;

    /**
     * Checks that sandboxes' sockets fit under {@code runtimeRoot}.
     *
     * @throws IllegalArgumentException a socket path there would be too long, with what to do
     */
    public static void checkRuntimeRoot(Path runtimeRoot) {
        SocketPaths.forSandbox(runtimeRoot, "aaaaaaaaaaaa");
    }

    /**
     * Checks that {@code socket} is short enough to bind.
     *
     * @throws IllegalArgumentException it is too long, with what to do
     */
    public static void checkSocketPath(Path socket) {
        SocketPaths.checkLength(socket);
    }

    /** The directory of sandbox {@code id}'s sockets under {@code runtimeRoot}. */
    public static Path socketDirectory(Path runtimeRoot, String id) {
        return SocketPaths.dirOf(runtimeRoot, id);
    }
}
