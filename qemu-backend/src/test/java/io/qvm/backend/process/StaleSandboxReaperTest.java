package io.qvm.backend.process;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
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
        reaper = new StaleSandboxReaper(states, Duration.ofSeconds(1), LONG);
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
    void findsTheQemuThroughItsPidfileWhenThePidWasNeverRecorded() throws Exception {
        String qemu = requireQemu();
        SandboxState s = sandbox("dead2", qemu, processes.deadPid(), null);
        Process p = startQemu(s, qemu);

        assertEquals(ReapReport.Outcome.KILLED_AND_REMOVED, reaper.reap().entry("dead2").orElseThrow().outcome());
        await().atMost(LONG).until(() -> !p.isAlive());
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

        ReapReport report = new StaleSandboxReaper(states, cgroups, Duration.ofSeconds(1), LONG).reap();

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
}
