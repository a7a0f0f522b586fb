package io.qvm.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.internal.process.SandboxState;
import io.qvm.internal.process.SocketPaths;
import io.qvm.internal.process.StateDirectory;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLI's commands that read or reap a state directory ({@code ps}, {@code down}) and the
 * launch directory of a detached {@code up} go through the private-root check: a state root
 * others can reach is refused with exit 3 and the fix, and nothing in it is acted on.
 */
@Tag("unit")
@Tag("security")
class PrivateStateRootTest {

    @TempDir
    Path tmp;

    private Process canary;

    @AfterEach
    void stopCanary() throws Exception {
        if (canary != null) {
            canary.destroyForcibly().waitFor(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void psAndDownRefuseASharedStateRootAndLeaveItsStaleSandboxAlone() throws Exception {
        Path root = tmp.resolve("state");
        StateDirectory states = StateDirectory.at(root);
        String id = StateDirectory.newSandboxId();
        SandboxState s = states.create(id, "sh", SocketPaths.forSandbox(tmp.resolve("run"), id));
        // the "QEMU": a real process whose argv names the sandbox, recorded with its start instant
        canary = new ProcessBuilder("sh", "-c", "read x", s.pidFile().toString()).start();
        await().atMost(Duration.ofSeconds(60))
                .until(() -> canary.info().commandLine().orElse("").contains(s.pidFile().toString()));
        s.recordQemu(canary.toHandle());
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor(60, TimeUnit.SECONDS);
        Files.writeString(s.ownerFile(), Files.readString(s.ownerFile())
                .replaceAll("\"ownerPid\" : \\d+", "\"ownerPid\" : " + gone.pid()));
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxr-xr-x"));
        CliContext ctx = CliRun.context(root, tmp.resolve("images"), FakeImageTool.NO_BUILDS);

        for (String[] args : new String[][] {{"ps"}, {"down", "--all"}, {"down", id}}) {
            CliRun.Result r = CliRun.run(ctx, args);
            assertEquals(ExitCode.HOST.code(), r.exit(), r.toString());
            assertTrue(r.err().contains("chmod 700 " + root) && r.err().contains("QVM_STATE"), r.toString());
        }

        assertTrue(canary.isAlive(), "a stale sandbox in a shared root is not reaped");
        assertTrue(Files.exists(s.ownerFile()));
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(root)), "never chmod-ed");
    }

    @Test
    void theLaunchDirectoryIsPrivateAndASharedStateRootIsRefused() throws Exception {
        Path root = tmp.resolve("state");
        Path dir = Launch.create(root, "h1");
        for (Path p : new Path[] {root, root.resolve("launch"), dir}) {
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)), p.toString());
        }
        assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> Launch.create(root, "h1"),
                "a handle's directory is always new");

        Path shared = Files.createDirectory(tmp.resolve("shared"));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        UnsafeDirectoryException e = assertThrows(UnsafeDirectoryException.class, () -> Launch.create(shared, "h2"));
        assertTrue(e.getMessage().contains("rwxrwxrwx"), e.getMessage());
        assertFalse(Files.exists(shared.resolve("launch")), "nothing created in it");
        assertEquals(ExitCode.HOST.code(), Failures.classify(e).exitCode().code());
    }
}
