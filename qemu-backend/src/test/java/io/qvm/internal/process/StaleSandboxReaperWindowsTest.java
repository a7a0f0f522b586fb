package io.qvm.internal.process;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reaper where the OS gives no process arguments (Windows: {@link ProcessHandle.Info#arguments()}
 * is empty), reached here through {@link ProcessTable#windowsShaped()}: real processes, real
 * state directories, the pid table as the JDK shows it on Windows.
 */
@Tag("unit")
@Tag("security")
class StaleSandboxReaperWindowsTest {

    private static final Duration LONG = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    private final TestProcesses processes = new TestProcesses();
    private StateDirectory states;
    private Path runtimeRoot;

    @BeforeEach
    void setUp() {
        states = StateDirectory.at(tmp.resolve("state"));
        runtimeRoot = tmp.resolve("run");
    }

    @AfterEach
    void cleanUp() throws Exception {
        processes.close();
    }

    private StaleSandboxReaper reaper(ProcessTable table) {
        return new StaleSandboxReaper(states, runtimeRoot, null, Duration.ofSeconds(1), LONG, table);
    }

    /** A sandbox whose owner is gone, its "QEMU" a real process that plays the part. */
    private SandboxState orphan(String id, String binary) throws Exception {
        SocketPaths sockets = SocketPaths.forSandbox(runtimeRoot, id).createDirectories();
        SandboxState s = states.create(id, binary, sockets);
        OwnerRecord o = s.owner();
        s.write(new OwnerRecord(o.sandboxId(), o.hostName(), processes.deadPid(), null, o.createdAt(), o.qemuBinary(),
                o.runtimeDir(), null, null));
        return s;
    }

    @Test
    void anOrphanedQemuWithoutArgumentsIsKnownByItsStartInstantAndExecutableAndStopped() throws Exception {
        SandboxState s = orphan("winkill", "sleep");
        Process qemu = processes.start("sleep", "600");
        s.recordQemu(qemu.toHandle()); // at launch: pid, start instant and the executable's path

        ReapReport.Entry e = reaper(ProcessTable.windowsShaped()).reap().entry("winkill").orElseThrow();

        assertEquals(ReapReport.Outcome.KILLED_AND_REMOVED, e.outcome(), e.reason());
        await().atMost(LONG).until(() -> !qemu.isAlive());
        assertFalse(Files.exists(s.dir()));
        assertFalse(Files.exists(runtimeRoot.resolve("winkill")));
    }

    @Test
    void withoutArgumentsOrARecordedExecutableTheRecordOfALiveQemuIsKeptAndItsPidNamed() throws Exception {
        SandboxState s = orphan("winold", "sleep");
        Process qemu = processes.start("sleep", "600");
        // a record written before the executable was recorded: pid and start instant only
        s.write(s.owner().withQemu(qemu.pid(), qemu.toHandle().info().startInstant().orElseThrow()));

        ReapReport.Entry e = reaper(ProcessTable.windowsShaped()).reap().entry("winold").orElseThrow();

        assertEquals(ReapReport.Outcome.SKIPPED_UNVERIFIABLE, e.outcome(), e.reason());
        assertTrue(e.reason().contains("pid " + qemu.pid()), e.reason());
        assertTrue(qemu.isAlive(), "nothing that may be ours is signalled without proof");
        assertTrue(Files.exists(s.ownerFile()), "never delete the record of something that may still run");
    }

    @Test
    void withoutArgumentsAnUnreadableStartInstantIsNoProofEitherWay() throws Exception {
        SandboxState s = orphan("winnostart", "sleep");
        Process qemu = processes.start("sleep", "600");
        s.recordQemu(qemu.toHandle());
        ProcessTable noStart = pid -> ProcessTable.windowsShaped().find(pid)
                .map(i -> new ProcessInfo(i.handle(), Optional.empty(), i.executable(), i.argv()));

        ReapReport.Entry e = reaper(noStart).reap().entry("winnostart").orElseThrow();

        assertEquals(ReapReport.Outcome.SKIPPED_UNVERIFIABLE, e.outcome(), e.reason());
        assertTrue(e.reason().contains("pid " + qemu.pid()), e.reason());
        assertTrue(qemu.isAlive());
        assertTrue(Files.exists(s.ownerFile()));
    }

    @Test
    void withoutArgumentsAProcessWithAnotherExecutableIsNotOursAndOnlyTheRecordGoes() throws Exception {
        SandboxState s = orphan("winother", "qemu-system-x86_64.exe");
        Process stranger = processes.start("sleep", "600");
        // the recorded QEMU started at the same instant (as far as the clock tells) but was another program
        s.write(s.owner().withQemu(stranger.pid(), stranger.toHandle().info().startInstant().orElseThrow(),
                "C:\\Program Files\\qemu\\qemu-system-x86_64.exe"));

        ReapReport.Entry e = reaper(ProcessTable.windowsShaped()).reap().entry("winother").orElseThrow();

        assertEquals(ReapReport.Outcome.REMOVED, e.outcome(), e.reason());
        assertTrue(e.reason().contains("its executable is"), e.reason());
        assertTrue(stranger.isAlive(), "a process that is provably not ours is never signalled");
        assertFalse(Files.exists(s.dir()));
    }

    @Test
    void recordsTheExecutableAtLaunchAndReadsItBack() throws Exception {
        SandboxState s = orphan("winrec", "sleep");
        Process qemu = processes.start("sleep", "600");
        s.recordQemu(qemu.toHandle());

        OwnerRecord o = s.owner();
        assertEquals(qemu.toHandle().info().command().orElseThrow(), o.qemuExecutable());
        assertEquals(qemu.pid(), o.qemuPid());
    }

    @Test
    void executablePathsAreComparedAsTheirFileSystemsDo() {
        assertTrue(ProcessIdentity.sameExecutable("C:\\Program Files\\qemu\\qemu-system-x86_64.exe",
                "c:\\program files\\QEMU\\qemu-system-x86_64.EXE"), "NTFS names are case-insensitive");
        assertFalse(ProcessIdentity.sameExecutable("C:\\qemu\\qemu-system-x86_64.exe",
                "C:\\qemu\\qemu-system-aarch64.exe"));
        assertFalse(ProcessIdentity.sameExecutable("/usr/bin/qemu-system-x86_64", "/usr/bin/QEMU-system-x86_64"),
                "POSIX names are not");
        assertEquals("qemu-system-x86_64.exe", ProcessIdentity.baseName("D:\\tools\\qemu-system-x86_64.exe"));
    }
}
