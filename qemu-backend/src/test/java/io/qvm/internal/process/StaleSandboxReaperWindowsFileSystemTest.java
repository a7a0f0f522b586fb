package io.qvm.internal.process;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.jimfs.Configuration;
import com.google.common.jimfs.Jimfs;
import io.qvm.protocol.util.PrivateDirectory;
import java.nio.file.FileSystem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The state directory and the reaper on a Windows-shaped file system (Jimfs in Windows mode:
 * drive letters, backslashes, case-insensitive names, owners and ACLs but no POSIX), with the pid
 * table as the JDK shows it on Windows (no arguments) and real processes.
 */
@Tag("unit")
@Tag("security")
class StaleSandboxReaperWindowsFileSystemTest {

    private static final Duration LONG = Duration.ofSeconds(60);

    private final TestProcesses processes = new TestProcesses();
    private FileSystem fs;
    private StateDirectory states;
    private Path runtimeRoot;
    private StaleSandboxReaper reaper;

    @BeforeEach
    void setUp() {
        fs = Jimfs.newFileSystem(Configuration.windows().toBuilder()
                .setRoots("C:\\", "D:\\")
                .setAttributeViews("basic", "owner", "acl")
                .setDefaultAttributeValue("owner:owner", System.getProperty("user.name"))
                .build());
        states = StateDirectory.at(fs.getPath("C:\\Users\\me\\AppData\\Local\\qvm\\state"));
        runtimeRoot = fs.getPath("C:\\Users\\me\\AppData\\Local\\Temp\\qvm");
        reaper = new StaleSandboxReaper(states, runtimeRoot, null, Duration.ofSeconds(1), LONG,
                ProcessTable.windowsShaped());
    }

    @AfterEach
    void tearDown() throws Exception {
        processes.close();
        fs.close();
    }

    /** A sandbox of a dead owner whose owner.json spells its runtime directory {@code runtimeDir}. */
    private SandboxState orphan(String id, String runtimeDir) throws Exception {
        SocketPaths sockets = SocketPaths.forSandbox(runtimeRoot, id);
        PrivateDirectory.ensureChain(runtimeRoot, sockets.dir());
        SandboxState s = states.create(id, "qemu-system-x86_64.exe", sockets);
        OwnerRecord o = s.owner();
        s.write(new OwnerRecord(o.sandboxId(), o.hostName(), processes.deadPid(), null, o.createdAt(), o.qemuBinary(),
                runtimeDir, null, null));
        return s;
    }

    @Test
    void stateIsCreatedPrivateUnderADriveLetter() throws Exception {
        SandboxState s = states.create("winfs0", "qemu-system-x86_64.exe", null);
        assertEquals("C:\\Users\\me\\AppData\\Local\\qvm\\state\\sandboxes\\winfs0", s.dir().toString());
        PrivateDirectory.verify(states.root());
        PrivateDirectory.verify(states.sandboxesDir());
        PrivateDirectory.verify(s.dir());
        assertEquals(1, states.list().size());
        assertTrue(states.checkPrivate());
    }

    @Test
    void aRuntimeDirectoryRecordedInAnotherCaseIsStillRecognisedAndRemoved() throws Exception {
        Path mine = SocketPaths.dirOf(runtimeRoot, "winfs1");
        // NTFS names are case-insensitive: the recorded spelling may differ from this process's
        SandboxState s = orphan("winfs1", mine.toString().toLowerCase(Locale.ROOT));
        s.write(s.owner().withQemu(processes.deadPid(), null));

        ReapReport.Entry e = reaper.reap().entry("winfs1").orElseThrow();

        assertEquals(ReapReport.Outcome.REMOVED, e.outcome(), e.reason());
        assertFalse(Files.exists(s.dir()));
        assertFalse(Files.exists(mine), "its own runtime directory goes with it: " + e.reason());
    }

    @Test
    void anOrphanedQemuIsStoppedAndItsWindowsPathsRemoved() throws Exception {
        Path mine = SocketPaths.dirOf(runtimeRoot, "winfs2");
        SandboxState s = orphan("winfs2", mine.toString());
        Process qemu = processes.start("sleep", "600");
        s.recordQemu(qemu.toHandle());

        ReapReport.Entry e = reaper.reap().entry("winfs2").orElseThrow();

        assertEquals(ReapReport.Outcome.KILLED_AND_REMOVED, e.outcome(), e.reason());
        await().atMost(LONG).until(() -> !qemu.isAlive());
        assertFalse(Files.exists(s.dir()));
        assertFalse(Files.exists(mine));
    }

    @Test
    void aRuntimeDirectoryOutsideTheRuntimeRootIsNeverDeletedThereEither() throws Exception {
        Path victim = Files.createDirectories(fs.getPath("D:\\projects\\winfs3"));
        Files.writeString(victim.resolve("precious"), "x");
        SandboxState s = orphan("winfs3", victim.toString());

        ReapReport.Entry e = reaper.reap().entry("winfs3").orElseThrow();

        assertEquals(ReapReport.Outcome.REMOVED, e.outcome(), e.reason());
        assertTrue(Files.exists(victim.resolve("precious")));
    }
}
