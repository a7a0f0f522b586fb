package io.qvm.reliability;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qvm.internal.process.SandboxState;
import io.qvm.internal.process.SocketPaths;
import io.qvm.internal.process.StateDirectory;
import io.qvm.protocol.util.PrivateDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Run state roots against real processes: a pid that ended, this JVM, a process that names a root. */
@Tag("unit")
class RunStatesTest {

    @TempDir
    Path tmp;

    @Test
    void aRunGetsARootNamedAfterItsJvm() throws Exception {
        Path root = RunStates.create(tmp);
        assertTrue(Files.isDirectory(root));
        assertTrue(root.getFileName().toString().startsWith("qvm-reliability-" + ProcessHandle.current().pid() + "-"),
                root.toString());
    }

    @Test
    void aRunGetsAPrivateRoot() throws Exception {
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(RunStates.create(tmp))));
    }

    @Test
    void theRootOfAKilledRunIsRemovedAndLiveOnesAndStrangersAreKept() throws Exception {
        // as a run makes them: the root private (RunStates.create), its state directories too (the backend's)
        Path dead = PrivateDirectory.ensure(tmp.resolve("qvm-reliability-" + deadPid() + "-123"));
        PrivateDirectory.ensureChain(dead, dead.resolve("load/sandboxes"));
        Files.writeString(dead.resolve("load/left.log"), "what a killed run left");
        Path mine = RunStates.create(tmp);
        Path oldName = Files.createDirectories(tmp.resolve("qvm-reliability-4878042549941074163"));
        Path other = Files.createDirectories(tmp.resolve("something-else"));

        assertEquals(List.of(dead), RunStates.removeStale(tmp));

        assertFalse(Files.exists(dead));
        assertTrue(Files.isDirectory(mine), "this JVM's run goes on");
        assertTrue(Files.isDirectory(oldName), "not a name this class gives");
        assertTrue(Files.isDirectory(other));
    }

    @Test
    void aRootAProcessStillNamesIsKept() throws Exception {
        Path dead = PrivateDirectory.ensure(tmp.resolve("qvm-reliability-" + deadPid() + "-456"));
        Process holder = new ProcessBuilder("sh", "-c", "sleep 600; :", dead.resolve("load").toString()).start();
        try {
            // Until the child has exec'd, its command line is still this JVM's.
            await().atMost(Duration.ofSeconds(30)).until(() -> holder.info().commandLine().orElse("").contains(dead.toString()));
            assertEquals(List.of(), RunStates.removeStale(tmp));
            assertTrue(Files.isDirectory(dead));
            assertTrue(holder.isAlive(), "only a QEMU proven to be a sandbox's is ever stopped");
        } finally {
            holder.descendants().forEach(ProcessHandle::destroyForcibly);
            holder.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        assertEquals(List.of(dead), RunStates.removeStale(tmp));
    }

    /**
     * A root named like a killed run's, planted in the shared parent by someone else (or shared):
     * {@code load/sandboxes/<id>/owner.json} aims the reaper at a canary process of ours (its argv
     * names the sandbox, its start instant recorded exactly) and at a canary directory that is
     * exactly {@code <runtime root>/<id>}. Returns the canary process.
     */
    private Process plant(Path root, String id, Path canaryDir) throws Exception {
        PrivateDirectory.ensure(root);
        SandboxState s = StateDirectory.at(root.resolve("load")).create(id, "sh",
                SocketPaths.forSandbox(canaryDir.getParent(), id));
        Process p = new ProcessBuilder("sh", "-c", "read x", s.pidFile().toString()).start();
        // until the child has exec'd, its command line is still this JVM's
        await().atMost(Duration.ofSeconds(60))
                .until(() -> p.info().commandLine().orElse("").contains(s.pidFile().toString()));
        s.recordQemu(p.toHandle());
        Files.writeString(s.ownerFile(), Files.readString(s.ownerFile())
                .replaceAll("\"ownerPid\" : \\d+", "\"ownerPid\" : " + deadPid()));
        Files.writeString(canaryDir.resolve("canary"), "must survive");
        return p;
    }

    @Test
    @Tag("security")
    void aRootPlantedByAnotherUserIsNeverReadReapedOrDeleted() throws Exception {
        assumeTrue(PrivateDirectory.currentUid() == 0, "only root can give a directory to another user (the suite "
                + "runs as root)");
        Path planted = tmp.resolve("qvm-reliability-" + deadPid() + "-planted");
        String id = "victim" + ProcessHandle.current().pid();
        Path canaryDir = canaryDir(id);
        Process canary = plant(planted, id, canaryDir);
        try {
            UserPrincipal nobody = tmp.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
            try (Stream<Path> all = Files.walk(planted)) {
                for (Path p : all.toList()) {
                    Files.setOwner(p, nobody);
                }
            }

            assertEquals(List.of(), RunStates.removeStale(tmp));

            assertTrue(canary.isAlive(), "the canary process was never signalled");
            assertTrue(Files.exists(canaryDir.resolve("canary")), "the canary directory was never deleted");
            assertTrue(Files.exists(planted.resolve("load/sandboxes").resolve(id).resolve("owner.json")),
                    "nothing of theirs was deleted either");
        } finally {
            canary.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            io.qvm.protocol.util.FileTrees.delete(canaryDir);
        }
    }

    @Test
    @Tag("security")
    void aSharedRootIsNeverRead() throws Exception {
        Path shared = tmp.resolve("qvm-reliability-" + deadPid() + "-shared");
        String id = "victim" + ProcessHandle.current().pid();
        Path canaryDir = canaryDir(id);
        Process canary = plant(shared, id, canaryDir);
        try {
            Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));

            assertEquals(List.of(), RunStates.removeStale(tmp));

            assertTrue(canary.isAlive(), "the canary process was never signalled");
            assertTrue(Files.exists(canaryDir.resolve("canary")), "the canary directory was never deleted");
            assertTrue(Files.isDirectory(shared));
        } finally {
            canary.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            io.qvm.protocol.util.FileTrees.delete(canaryDir);
        }
    }

    /** {@code <runtime root>/<id>}, the one directory the reaper may delete for sandbox {@code id}. */
    private static Path canaryDir(String id) throws Exception {
        Path root = SocketPaths.defaultRuntimeRoot();
        return PrivateDirectory.ensureChain(root, root.resolve(id));
    }

    /** The pid of a process that has ended. */
    private static long deadPid() throws Exception {
        Process p = new ProcessBuilder("true").start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        return p.pid();
    }
}
