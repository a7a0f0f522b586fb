package io.qvm.internal.process;

import io.qvm.internal.host.Posix;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import io.qvm.HostSetupException;
import io.qvm.protocol.util.PrivateDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.time.Instant;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The reaper against real processes: real QEMU, real unrelated processes, real dead pids. */
@Tag("unit")
class StaleSandboxReaperTest {

    private static final Duration LONG = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    private final TestProcesses processes = new TestProcesses();
    private StateDirectory states;
    private Path runtimeRoot;
    private StaleSandboxReaper reaper;

    @BeforeEach
    void setUp() {
        states = StateDirectory.at(tmp.resolve("state"));
        runtimeRoot = tmp.resolve("run");
        reaper = new StaleSandboxReaper(states, runtimeRoot, null, Duration.ofSeconds(1), LONG);
    }

    @AfterEach
    void cleanUp() throws Exception {
        processes.close();
    }

    /** A sandbox whose owner.json names {@code ownerPid} / {@code ownerStart} as owner. */
    private SandboxState sandbox(String id, String qemuBinary, long ownerPid, Instant ownerStart) throws Exception {
        SocketPaths sockets = SocketPaths.forSandbox(runtimeRoot, id).createDirectories();
        SandboxState s = states.create(id, qemuBinary, sockets);
        OwnerRecord o = s.owner();
        s.write(new OwnerRecord(o.sandboxId(), o.hostName(), ownerPid, ownerStart, o.createdAt(), o.qemuBinary(),
                o.runtimeDir(), o.qemuPid(), o.qemuStartedAt()));
        return s;
    }

    private Process startQemu(SandboxState s, String qemu) throws Exception {
        Process p = processes.start(qemu, "-M", "none", "-nodefaults", "-no-user-config", "-display", "none",
                "-pidfile", s.pidFile().toString(),
                "-qmp", "unix:" + SocketPaths.forSandbox(runtimeRoot, s.id()).qmp() + ",server=on,wait=off");
        await().atMost(LONG).until(() -> s.pidFromPidFile().isPresent());
        return p;
    }

    private static String requireQemu() {
        String qemu = TestProcesses.qemuBinary();
        assumeTrue(qemu != null, "qemu-system-x86_64 is not on PATH; install package qemu-system-x86 to run this test");
        return qemu;
    }

    @Test
    @Tag("qemu")
    void killsTheQemuOfADeadOwnerAndRemovesItsDirectories() throws Exception {
        String qemu = requireQemu();
        SandboxState s = sandbox("dead1", qemu, processes.deadPid(), Instant.now());
        Process p = startQemu(s, qemu);
        s.recordQemu(p.toHandle());

        ReapReport report = reaper.reap();

        ReapReport.Entry e = report.entry("dead1").orElseThrow();
        assertEquals(ReapReport.Outcome.KILLED_AND_REMOVED, e.outcome(), e.reason());
        await().atMost(LONG).until(() -> !p.isAlive());
        assertFalse(Files.exists(s.dir()));
        assertFalse(Files.exists(runtimeRoot.resolve("dead1")));
    }

    @Test
    @Tag("qemu")
    void aQemuFoundOnlyThroughItsPidfileIsNotSignalledWithoutARecordedStartInstant() throws Exception {
        String qemu = requireQemu();
        SandboxState s = sandbox("dead2", qemu, processes.deadPid(), null);
        Process p = startQemu(s, qemu);

        ReapReport.Entry e = reaper.reap().entry("dead2").orElseThrow();

        assertEquals(ReapReport.Outcome.SKIPPED_UNVERIFIABLE, e.outcome(), e.reason());
        assertTrue(e.reason().contains("kill " + p.pid()), e.reason());
        assertTrue(p.isAlive(), "a pid without its recorded start instant is never signalled");
        assertTrue(Files.exists(s.ownerFile()), "its state stays for whoever stops it by hand");
    }

    @Test
    @Tag("qemu")
    void leavesSandboxesOfALiveOwnerAlone() throws Exception {
        String qemu = requireQemu();
        ProcessHandle me = ProcessHandle.current();
        SandboxState s = sandbox("alive", qemu, me.pid(), me.info().startInstant().orElseThrow());
        Process p = startQemu(s, qemu);
        s.recordQemu(p.toHandle());

        ReapReport.Entry e = reaper.reap().entry("alive").orElseThrow();

        assertEquals(ReapReport.Outcome.SKIPPED_OWNER_ALIVE, e.outcome(), e.reason());
        assertTrue(p.isAlive());
        assertTrue(Files.exists(s.ownerFile()));
    }

    @Test
    @Tag("qemu")
    void ownerPidReusedByAnotherProcessCountsAsDead() throws Exception {
        String qemu = requireQemu();
        Process impostor = processes.start("sleep", "600");
        SandboxState s = sandbox("reused", qemu, impostor.pid(), Instant.parse("2001-01-01T00:00:00Z"));
        Process p = startQemu(s, qemu);
        s.recordQemu(p.toHandle());

        assertEquals(ReapReport.Outcome.KILLED_AND_REMOVED, reaper.reap().entry("reused").orElseThrow().outcome());
        await().atMost(LONG).until(() -> !p.isAlive());
        assertTrue(impostor.isAlive(), "the owner's pid is never signalled");
    }

    @Test
    void neverKillsAnUnrelatedProcessThatHasTheRecordedQemuPid() throws Exception {
        SandboxState s = sandbox("reusedqemu", "qemu-system-x86_64", processes.deadPid(), null);
        Process unrelated = processes.start("sleep", "600");
        s.write(s.owner().withQemu(unrelated.pid(), unrelated.toHandle().info().startInstant().orElse(null)));

        ReapReport.Entry e = reaper.reap().entry("reusedqemu").orElseThrow();

        assertEquals(ReapReport.Outcome.REMOVED, e.outcome(), e.reason());
        assertTrue(e.reason().contains("not this sandbox's QEMU"), e.reason());
        assertTrue(unrelated.isAlive(), "an unrelated process must never be killed");
        assertFalse(Files.exists(s.dir()));
    }

    @Test
    @Tag("qemu")
    void neverKillsAQemuOfAnotherSandbox() throws Exception {
        String qemu = requireQemu();
        SandboxState other = sandbox("othersb", qemu, ProcessHandle.current().pid(),
                ProcessHandle.current().info().startInstant().orElseThrow());
        Process otherQemu = startQemu(other, qemu);
        SandboxState s = sandbox("stale", qemu, processes.deadPid(), null);
        s.write(s.owner().withQemu(otherQemu.pid(), null));

        ReapReport report = reaper.reap();

        assertEquals(ReapReport.Outcome.REMOVED, report.entry("stale").orElseThrow().outcome());
        assertEquals(ReapReport.Outcome.SKIPPED_OWNER_ALIVE, report.entry("othersb").orElseThrow().outcome());
        assertTrue(otherQemu.isAlive());
    }

    @Test
    void qemuThatIgnoresSigtermIsKilled() throws Exception {
        SandboxState s = sandbox("stubborn", "sh", processes.deadPid(), null);
        Path ready = tmp.resolve("ready");
        // argv: sh -c '...' <pidfile>: argv[0] is the recorded binary and the args name the pidfile
        Process p = processes.start("sh", "-c", "trap '' TERM; touch '" + ready + "'; read x", s.pidFile().toString());
        await().atMost(LONG).until(() -> Files.exists(ready));
        s.recordQemu(p.toHandle());

        ReapReport.Entry e = reaper.reap().entry("stubborn").orElseThrow();

        assertEquals(ReapReport.Outcome.KILLED_AND_REMOVED, e.outcome(), e.reason());
        assertTrue(e.reason().contains("SIGKILL"), e.reason());
        await().atMost(LONG).until(() -> !p.isAlive());
    }

    @Test
    void qemuAlreadyGoneOnlyRemovesState() throws Exception {
        SandboxState s = sandbox("gone", "qemu-system-x86_64", processes.deadPid(), null);
        s.write(s.owner().withQemu(processes.deadPid(), null));
        assertEquals(ReapReport.Outcome.REMOVED, reaper.reap().entry("gone").orElseThrow().outcome());
        assertFalse(Files.exists(s.dir()));
        assertFalse(Files.exists(runtimeRoot.resolve("gone")), "its own <runtime root>/<id> goes with it");
    }

    @Test
    void aStaleSandboxsCgroupGoesWithIt() throws Exception {
        CgroupTree cgroups = CgroupTree.at(CgroupTreeTest.fakeMount(tmp.resolve("cgroup"), "memory pids"));
        cgroups.prepare();
        SandboxState s = sandbox("gonecg", "qemu-system-x86_64", processes.deadPid(), null);
        s.write(s.owner().withQemu(processes.deadPid(), null));
        CgroupTree.Cgroup g = cgroups.create("gonecg", 1 << 30, 100);
        SandboxState alive = sandbox("alivecg", "qemu-system-x86_64", ProcessHandle.current().pid(),
                ProcessHandle.current().info().startInstant().orElse(null));
        CgroupTree.Cgroup kept = cgroups.create("alivecg", 1 << 30, 100);

        ReapReport report = new StaleSandboxReaper(states, runtimeRoot, cgroups, Duration.ofSeconds(1), LONG).reap();

        assertEquals(ReapReport.Outcome.REMOVED, report.entry("gonecg").orElseThrow().outcome());
        assertFalse(Files.exists(g.dir()), "the stale sandbox's cgroup is removed");
        assertTrue(Files.exists(kept.dir()), "a live owner's cgroup stays");
        assertTrue(Files.exists(alive.dir()));
        kept.close();
    }

    @Test
    void recordsFromAnotherHostOrUnreadableAreLeftAlone() throws Exception {
        SandboxState far = sandbox("far", "qemu", processes.deadPid(), null);
        OwnerRecord o = far.owner();
        far.write(new OwnerRecord(o.sandboxId(), "some-other-host", o.ownerPid(), null, o.createdAt(), o.qemuBinary(),
                o.runtimeDir(), null, null));
        SandboxState broken = sandbox("broken", "qemu", processes.deadPid(), null);
        Files.writeString(broken.ownerFile(), "{truncated");

        ReapReport report = reaper.reap();

        assertEquals(ReapReport.Outcome.SKIPPED_OTHER_HOST, report.entry("far").orElseThrow().outcome());
        assertEquals(ReapReport.Outcome.SKIPPED_UNREADABLE, report.entry("broken").orElseThrow().outcome());
        assertTrue(Files.exists(far.dir()));
        assertTrue(Files.exists(broken.dir()));
    }

    @Test
    void emptyStateDirectoryIsFine() throws Exception {
        assertTrue(reaper.reap().entries().isEmpty());
    }

    // ---- what the reaper acts on must be this user's own (issue 19) ---------------------------------

    /** A real process of ours and a directory with a file in it, which a planted owner.json aims at. */
    private record Canary(Process process, Path dir) {
    }

    /**
     * Plants {@code root/sandboxes/<id>/owner.json} as a hostile user would: the owner gone, the
     * "QEMU" a real process of ours whose argv names the sandbox's pidfile and whose start instant
     * is recorded exactly, the runtime directory exactly {@code <runtime root>/<id>} with a file in
     * it. Every check the reaper makes per sandbox passes: only the check of the root protects them.
     */
    private Canary plant(Path root, String id) throws Exception {
        Path dir = PrivateDirectory.ensureChain(root, root.resolve("sandboxes").resolve(id));
        SandboxState s = new SandboxState(id, dir);
        Path runtimeDir = PrivateDirectory.ensureChain(runtimeRoot, runtimeRoot.resolve(id));
        Files.writeString(runtimeDir.resolve("canary"), "must survive");
        Process p = startNaming(s.pidFile());
        s.write(new OwnerRecord(id, HostName.get(), processes.deadPid(), null, Instant.now(), "sh",
                runtimeDir.toString(), p.pid(), p.toHandle().info().startInstant().orElseThrow()));
        return new Canary(p, runtimeDir);
    }

    /** {@code sh -c 'read x' <path>}: a real process that runs until its stdin closes, its argv naming {@code path}. */
    private Process startNaming(Path path) throws Exception {
        Process p = processes.start("sh", "-c", "read x", path.toString());
        // until the child has exec'd, its command line is still this JVM's
        await().atMost(LONG).until(() -> ProcessIdentity.commandLine(p.toHandle())
                .map(argv -> argv.contains(path.toString())).orElse(false));
        return p;
    }

    private static void assertSurvived(Canary c) {
        assertTrue(c.process().isAlive(), "the canary process was never signalled");
        assertTrue(Files.exists(c.dir().resolve("canary")), "the canary directory was never deleted");
    }

    private void assertRefused(Path root, String what) {
        StaleSandboxReaper r = new StaleSandboxReaper(StateDirectory.at(root), runtimeRoot, null, Duration.ofSeconds(1),
                LONG);
        HostSetupException e = assertThrows(HostSetupException.class, r::reap, "a reaper on " + root);
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
        assertTrue(e.getMessage().contains(what) && e.getMessage().contains("QVM_STATE"), e.getMessage());
    }

    @Test
    @Tag("security")
    void aStateRootOfAnotherUserIsNeverReadAndItsBaitIsNotTaken() throws Exception {
        assumeTrue(Posix.currentUid() == 0, "only root can give a directory to another user (the suite runs as root)");
        Path planted = tmp.resolve("planted");
        Canary c = plant(planted, "victim");
        UserPrincipal nobody = tmp.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        try (Stream<Path> all = Files.walk(planted)) {
            for (Path p : all.toList()) {
                Files.setOwner(p, nobody);
            }
        }

        assertRefused(planted, "owned by uid");

        assertSurvived(c);
        assertTrue(Files.exists(planted.resolve("sandboxes/victim/owner.json")), "nothing of theirs was deleted either");
    }

    @Test
    @Tag("security")
    void aStateRootOfOursThatIsSharedOrASymlinkIsRefusedBeforeAnythingIsRead() throws Exception {
        Path root = tmp.resolve("mine");
        Canary c = plant(root, "victim");
        Path sandboxes = root.resolve("sandboxes");

        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxr-xr-x"));
        assertRefused(root, "rwxr-xr-x");
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(root)), "never chmod-ed");
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwx------"));
        Files.setPosixFilePermissions(sandboxes, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertRefused(root, "rwxrwxrwx");
        Files.setPosixFilePermissions(sandboxes, PosixFilePermissions.fromString("rwx------"));
        assertRefused(Files.createSymbolicLink(tmp.resolve("link"), root), "symlink");
        assertSurvived(c);

        // the control: the same root, private again, is reaped — the bait was real
        ReapReport.Entry e = new StaleSandboxReaper(StateDirectory.at(root), runtimeRoot, null, Duration.ofSeconds(1),
                LONG).reap().entry("victim").orElseThrow();
        assertEquals(ReapReport.Outcome.KILLED_AND_REMOVED, e.outcome(), e.reason());
        await().atMost(LONG).until(() -> !c.process().isAlive());
        assertFalse(Files.exists(c.dir()));
    }

    @Test
    @Tag("security")
    void aQemuPidWithoutARecordedStartInstantIsNeverSignalled() throws Exception {
        SandboxState s = sandbox("nostart", "sh", processes.deadPid(), null);
        Process p = startNaming(s.pidFile());
        s.write(s.owner().withQemu(p.pid(), null));

        ReapReport.Entry e = reaper.reap().entry("nostart").orElseThrow();

        assertEquals(ReapReport.Outcome.SKIPPED_UNVERIFIABLE, e.outcome(), e.reason());
        assertTrue(e.reason().contains("no QEMU start instant was recorded"), e.reason());
        assertTrue(p.isAlive(), "its argv names the sandbox, but without the start instant it is no proof");
        assertTrue(Files.exists(s.ownerFile()));
    }

    @Test
    @Tag("security")
    void aRecordedRuntimeDirectoryOtherThanRuntimeRootSlashIdIsNeverDeleted() throws Exception {
        SandboxState s = sandbox("elsewhere", "qemu-system-x86_64", processes.deadPid(), null);
        // named like the sandbox, as the old check wanted, but not in the runtime root: /home/alice/src, say
        Path victim = Files.createDirectories(tmp.resolve("home/alice/elsewhere"));
        Files.writeString(victim.resolve("precious"), "x");
        OwnerRecord o = s.owner();
        s.write(new OwnerRecord(o.sandboxId(), o.hostName(), o.ownerPid(), o.ownerStartedAt(), o.createdAt(),
                o.qemuBinary(), victim.toString(), null, null));

        ReapReport.Entry e = reaper.reap().entry("elsewhere").orElseThrow();

        assertEquals(ReapReport.Outcome.REMOVED, e.outcome(), e.reason());
        assertTrue(e.reason().contains("is not " + runtimeRoot.resolve("elsewhere")), e.reason());
        assertTrue(Files.exists(victim.resolve("precious")));
        assertFalse(Files.exists(s.dir()), "its state directory, which is ours, goes");
    }
}
