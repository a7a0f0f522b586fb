package io.qvm.internal.process;

import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Cleans up after owners that died without stopping their QEMU (JVM killed, host crash...).
 * Run it when a backend starts.
 *
 * <p>It acts only on state this user wrote: the state directory's root and {@code sandboxes/} must
 * be private directories of this uid ({@link StateDirectory#checkPrivate}, checked before anything
 * in them is read); a shared, foreign or symlinked root is refused as a whole. Then, for each
 * {@code sandboxes/<id>/}:
 * <ol>
 *   <li>Read owner.json; if unreadable, or written on another host, leave it.
 *   <li>Is the owner alive? Its pid must be alive <em>and</em> have the recorded start instant
 *       (otherwise the pid was reused and the owner is gone). If alive, leave it.
 *   <li>Find the QEMU pid (owner.json, else QEMU's pidfile) and look it up ({@link ProcessTable}).
 *       It is <em>not</em> that QEMU — the record goes, the process is left alone — if anything
 *       known about it contradicts the record: its start instant, its executable path (recorded at
 *       launch, {@link OwnerRecord#qemuExecutable()}), or, where the OS gives the command line, its
 *       argv[0] or arguments that do not mention this sandbox (its pidfile path, or its id as a
 *       path segment such as its socket directory).
 *   <li>It is proven to be that QEMU only if its start instant is recorded and matches <em>and</em>
 *       either its command line was read and names this sandbox (Linux, macOS) or — where the OS
 *       gives no command line (Windows: {@link ProcessHandle.Info#arguments()} is empty) — its
 *       executable path is recorded and matches. Anything in between (a record without a start
 *       instant or executable, an unreadable start instant) is no proof either way: the pid is
 *       not signalled <em>and the record is kept</em>, its reason naming the pid, since it may
 *       still run.
 *   <li>If it is that QEMU: SIGTERM, wait, SIGKILL, wait (on Windows both are TerminateProcess:
 *       an orphaned QEMU has nothing to save, and nothing here relies on its SIGTERM handler). Then delete the state directory, the
 *       socket directory — only if it is exactly {@code <runtime root>/<id>}
 *       ({@link SocketPaths#dirOf}) and a private directory of ours — and the sandbox's cgroup
 *       ({@link CgroupTree}), if any.
 * </ol>
 *
 * <pre>{@code
 * ReapReport report = new StaleSandboxReaper(StateDirectory.defaultLocation(), SocketPaths.defaultRuntimeRoot(),
 *         CgroupTree.system()).reap();
 * report.entries().forEach(e -> log(e.sandboxId() + ": " + e.outcome() + " — " + e.reason()));
 * }</pre>
 */
public final class StaleSandboxReaper {

    private static final System.Logger LOG = System.getLogger(StaleSandboxReaper.class.getName());

    private final StateDirectory states;
    private final Path runtimeRoot;
    private final CgroupTree cgroups;
    private final Duration termWait;
    private final Duration killWait;
    private final HostIdentity host;
    private final ProcessTable processes;

    /**
     * A reaper waiting 10 s after SIGTERM and 10 s after SIGKILL.
     *
     * @param runtimeRoot where {@link SocketPaths} put the sandboxes' socket directories: a
     *     recorded runtime directory is deleted only if it is {@code <runtimeRoot>/<id>}
     * @param cgroups where the sandboxes' cgroups are, removed with them (null: none)
     */
    public StaleSandboxReaper(StateDirectory states, Path runtimeRoot, CgroupTree cgroups) {
        this(states, runtimeRoot, cgroups, StopLadder.DEFAULT_TERM_WAIT, StopLadder.DEFAULT_KILL_WAIT);
    }

    public StaleSandboxReaper(StateDirectory states, Path runtimeRoot, CgroupTree cgroups, Duration termWait,
            Duration killWait) {
        this(states, runtimeRoot, cgroups, termWait, killWait, ProcessTable.system(), HostIdentity.current());
    }

    /** As above, for the host {@code host} (a test's: another OS's identifier, a renamed Mac). */
    StaleSandboxReaper(StateDirectory states, Path runtimeRoot, CgroupTree cgroups, Duration termWait,
            Duration killWait, HostIdentity host) {
        this(states, runtimeRoot, cgroups, termWait, killWait, ProcessTable.system(), host);
    }

    /** @param processes where pids are looked up ({@link ProcessTable#system()}; tests inject a Windows-shaped one) */
    public StaleSandboxReaper(StateDirectory states, Path runtimeRoot, CgroupTree cgroups, Duration termWait,
            Duration killWait, ProcessTable processes) {
        this(states, runtimeRoot, cgroups, termWait, killWait, processes, HostIdentity.current());
    }

    private StaleSandboxReaper(StateDirectory states, Path runtimeRoot, CgroupTree cgroups, Duration termWait,
            Duration killWait, ProcessTable processes, HostIdentity host) {
        this.host = Objects.requireNonNull(host, "host");
        this.processes = Objects.requireNonNull(processes, "processes");
        this.states = Objects.requireNonNull(states, "states");
        this.runtimeRoot = Objects.requireNonNull(runtimeRoot, "runtimeRoot").toAbsolutePath().normalize();
        this.cgroups = cgroups;
        this.termWait = positive("termWait", termWait);
        this.killWait = positive("killWait", killWait);
    }

    /**
     * Looks at every sandbox directory once; never throws for one bad sandbox.
     *
     * @throws io.qvm.HostSetupException the state directory is not a private one of ours: nothing
     *     in it was read, nothing was signalled or deleted
     */
    public ReapReport reap() throws IOException {
        List<ReapReport.Entry> entries = new ArrayList<>();
        for (SandboxState s : states.list()) {
            ReapReport.Entry e;
            try {
                e = reapOne(s);
            } catch (IOException | RuntimeException ex) {
                e = new ReapReport.Entry(s.id(), ReapReport.Outcome.FAILED, "unexpected error: " + ex);
            }
            LOG.log(e.outcome().removed() || e.outcome() == ReapReport.Outcome.FAILED ? Level.INFO : Level.DEBUG,
                    "sandbox {0}: {1} ({2})", e.sandboxId(), e.outcome(), e.reason());
            entries.add(e);
        }
        return new ReapReport(entries);
    }

    private ReapReport.Entry reapOne(SandboxState s) throws IOException {
        OwnerRecord owner;
        try {
            owner = s.owner();
        } catch (IOException e) {
            return entry(s, ReapReport.Outcome.SKIPPED_UNREADABLE, "cannot read " + s.ownerFile() + ": " + e.getMessage());
        }
        if (!owner.sandboxId().equals(s.id())) {
            return entry(s, ReapReport.Outcome.SKIPPED_UNREADABLE,
                    "owner.json names sandbox " + owner.sandboxId() + ", not " + s.id());
        }
        Optional<String> otherHost = host.otherHost(owner.hostId(), owner.hostName());
        if (otherHost.isPresent()) {
            return entry(s, ReapReport.Outcome.SKIPPED_OTHER_HOST, otherHost.get());
        }
        Optional<String> ownerAlive = ownerAlive(owner);
        if (ownerAlive.isPresent()) {
            return entry(s, ReapReport.Outcome.SKIPPED_OWNER_ALIVE, ownerAlive.get());
        }
        String ownerGone = "owner pid " + owner.ownerPid() + " is gone";

        OptionalLong qemuPid = owner.qemuPid() != null ? OptionalLong.of(owner.qemuPid()) : s.pidFromPidFile();
        Optional<ProcessInfo> qemu = qemuPid.isPresent() ? processes.find(qemuPid.getAsLong()) : Optional.empty();
        if (qemu.isEmpty()) {
            return remove(s, owner, ReapReport.Outcome.REMOVED, ownerGone + "; "
                    + (qemuPid.isPresent() ? "QEMU pid " + qemuPid.getAsLong() + " is not running" : "no QEMU pid recorded"));
        }
        ProcessInfo info = qemu.get();
        ProcessHandle h = info.handle();
        Optional<String> mismatch = QemuIdentity.notThatQemu(s, owner, info);
        if (mismatch.isPresent()) {
            return remove(s, owner, ReapReport.Outcome.REMOVED, ownerGone + "; pid " + h.pid()
                    + " is alive but is not this sandbox's QEMU (" + mismatch.get() + "); left it alone");
        }
        Optional<String> unproven = QemuIdentity.unproven(owner, info);
        if (unproven.isPresent()) {
            return entry(s, ReapReport.Outcome.SKIPPED_UNVERIFIABLE, ownerGone + "; QEMU pid " + h.pid()
                    + " is alive and nothing shows it is another process, but " + unproven.get()
                    + ", so it cannot be told from a process that got the same pid; not killing it, and keeping its "
                    + "record (if it is this sandbox's QEMU, stop it by hand: " + killHint(h.pid())
                    + ", then run the reaper again)");
        }
        String killed = kill(h);
        if (h.isAlive()) {
            return entry(s, ReapReport.Outcome.FAILED, ownerGone + "; QEMU pid " + h.pid() + " survived " + killed);
        }
        return remove(s, owner, ReapReport.Outcome.KILLED_AND_REMOVED, ownerGone + "; killed QEMU pid " + h.pid()
                + " with " + killed);
    }

    /** Why the owner counts as alive, or empty if it is gone. */
    private Optional<String> ownerAlive(OwnerRecord owner) {
        Optional<ProcessInfo> p = processes.find(owner.ownerPid());
        if (p.isEmpty()) {
            return Optional.empty();
        }
        Optional<Instant> actual = p.get().startInstant();
        if (owner.ownerStartedAt() != null && actual.isPresent() && !ProcessIdentity.sameStart(owner.ownerStartedAt(),
                actual.get())) {
            return Optional.empty(); // the pid was reused by a younger process
        }
        return Optional.of("owner pid " + owner.ownerPid() + " is alive"
                + (owner.ownerStartedAt() == null ? " (start instant not recorded)" : " with the recorded start instant"));
    }

    /** How to stop pid {@code pid} by hand on this host. */
    static String killHint(long pid) {
        return System.getProperty("os.name", "").startsWith("Windows") ? "taskkill /F /PID " + pid : "kill " + pid;
    }

    /** SIGTERM, wait, SIGKILL, wait; says which signals were needed. */
    private String kill(ProcessHandle h) {
        h.destroy(); // the JDK re-checks the start time before signalling, so a reused pid is safe here too
        if (waitForExit(h, termWait)) {
            return "SIGTERM";
        }
        h.destroyForcibly();
        waitForExit(h, killWait);
        return "SIGTERM then SIGKILL";
    }

    private static boolean waitForExit(ProcessHandle h, Duration wait) {
        try {
            h.onExit().get(wait.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException | ExecutionException e) {
            return !h.isAlive();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !h.isAlive();
        }
    }

    private ReapReport.Entry remove(SandboxState s, OwnerRecord owner, ReapReport.Outcome outcome, String reason) {
        String kept;
        try {
            kept = deleteRuntimeDir(s, owner);
            if (cgroups != null) {
                cgroups.remove(s.id());
            }
            s.delete();
        } catch (IOException e) {
            return entry(s, ReapReport.Outcome.FAILED, reason + "; but deleting its state failed: " + e);
        }
        return entry(s, outcome, reason + kept);
    }

    /**
     * Deletes the sandbox's socket directory, but only if owner.json names exactly
     * {@code <runtime root>/<id>} and that is a private directory of ours; else says why it was kept.
     */
    private String deleteRuntimeDir(SandboxState s, OwnerRecord owner) throws IOException {
        if (owner.runtimeDir() == null) {
            return "";
        }
        Path mine = SocketPaths.dirOf(runtimeRoot, s.id());
        if (!sameDirectory(owner.runtimeDir(), mine)) {
            LOG.log(Level.WARNING, "not deleting runtime dir {0} of sandbox {1}: it is not {2}", owner.runtimeDir(),
                    s.id(), mine);
            return "; its recorded runtime directory " + owner.runtimeDir() + " is not " + mine + ": left it";
        }
        try {
            if (!PrivateDirectory.verifyIfPresent(runtimeRoot) || !PrivateDirectory.verifyIfPresent(mine)) {
                return ""; // gone already
            }
        } catch (UnsafeDirectoryException e) {
            LOG.log(Level.WARNING, "not deleting runtime dir {0} of sandbox {1}: {2}", mine, s.id(), e.getMessage());
            return "; left its runtime directory: " + e.getMessage();
        }
        FileTrees.delete(mine);
        return "";
    }

    /**
     * Whether the recorded path names {@code mine}, as {@code mine}'s file system compares names
     * (on Windows case-insensitively, with either separator): the same path, or the same
     * existing directory.
     */
    private static boolean sameDirectory(String recorded, Path mine) {
        Path p;
        try {
            p = mine.getFileSystem().getPath(recorded);
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
        if (!p.isAbsolute()) {
            return false;
        }
        if (p.normalize().equals(mine) || recorded.equals(mine.toString())) {
            return true;
        }
        try {
            return java.nio.file.Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                    && java.nio.file.Files.isSameFile(p, mine);
        } catch (IOException e) {
            return false;
        }
    }

    private static ReapReport.Entry entry(SandboxState s, ReapReport.Outcome outcome, String reason) {
        return new ReapReport.Entry(s.id(), outcome, reason);
    }

    private static Duration positive(String name, Duration d) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + d);
        }
        return d;
    }
}
