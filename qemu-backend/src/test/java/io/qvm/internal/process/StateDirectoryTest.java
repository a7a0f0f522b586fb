package io.qvm.internal.process;

import io.qvm.internal.host.Posix;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.HostSetupException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class StateDirectoryTest {

    @TempDir
    Path tmp;

    private final TestProcesses processes = new TestProcesses();

    @AfterEach
    void cleanUp() throws Exception {
        processes.close();
    }

    @Test
    void createWritesAnOwnerRecordForThisProcess() throws Exception {
        StateDirectory states = StateDirectory.at(tmp.resolve("state"));
        SocketPaths sockets = SocketPaths.forSandbox(tmp.resolve("run"), "sb1");
        SandboxState s = states.create("sb1", "qemu-system-x86_64", sockets);
        OwnerRecord o = s.owner();
        assertEquals("sb1", o.sandboxId());
        assertEquals(ProcessHandle.current().pid(), o.ownerPid());
        assertEquals(ProcessHandle.current().info().startInstant().orElseThrow(), o.ownerStartedAt());
        assertEquals("qemu-system-x86_64", o.qemuBinary());
        assertEquals(sockets.dir().toString(), o.runtimeDir());
        assertEquals(HostName.get(), o.hostName());
        assertNull(o.qemuPid());
        assertEquals(tmp.resolve("state/sandboxes/sb1/qemu.pid"), s.pidFile());
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(s.dir().getParent())));
        assertThrows(FileAlreadyExistsException.class, () -> states.create("sb1", "qemu", null));
    }

    @Test
    void recordQemuKeepsTheOwnerAndAddsThePid() throws Exception {
        StateDirectory states = StateDirectory.at(tmp);
        SandboxState s = states.create("sb2", "sleep", null);
        Process p = processes.start("sleep", "600");
        s.recordQemu(p.toHandle());
        OwnerRecord o = s.owner();
        assertEquals(p.pid(), o.qemuPid());
        assertEquals(p.toHandle().info().startInstant().orElseThrow(), o.qemuStartedAt());
        assertEquals(ProcessHandle.current().pid(), o.ownerPid());
        try (var files = Files.list(s.dir())) {
            assertEquals(List.of("owner.json"), files.map(f -> f.getFileName().toString()).toList(), "no temp files left");
        }
    }

    @Test
    void listFindAndDelete() throws Exception {
        StateDirectory states = StateDirectory.at(tmp);
        assertTrue(states.list().isEmpty());
        states.create("b", "qemu", null);
        states.create("a", "qemu", null);
        Files.createDirectories(states.sandboxesDir().resolve(".hidden"));
        assertEquals(List.of("a", "b"), states.list().stream().map(SandboxState::id).toList());
        SandboxState a = states.find("a").orElseThrow();
        Files.writeString(a.stderrLog(), "x");
        a.delete();
        assertFalse(Files.exists(a.dir()));
        assertTrue(states.find("a").isEmpty());
    }

    @Test
    void idsAreValidated() {
        for (String bad : new String[] {"", "../x", "a/b", "-x", "x".repeat(41), "a b", null}) {
            assertThrows(IllegalArgumentException.class, () -> StateDirectory.checkSandboxId(bad), String.valueOf(bad));
        }
        String id = StateDirectory.newSandboxId();
        assertEquals(12, id.length());
        StateDirectory.checkSandboxId(id);
    }

    @Test
    void ownerJsonIsReadDistrustfully() throws Exception {
        SandboxState s = StateDirectory.at(tmp).create("c", "qemu", null);
        for (String bad : new String[] {"[]", "{\"format\": 2}", "not json",
                "{\"format\":1,\"sandboxId\":\"c\",\"hostName\":\"h\",\"ownerPid\":\"12\",\"createdAt\":\"2026-01-01T00:00:00Z\",\"qemuBinary\":\"q\"}",
                "{\"format\":1,\"sandboxId\":\"c\",\"hostName\":\"h\",\"ownerPid\":12,\"createdAt\":\"yesterday\",\"qemuBinary\":\"q\"}",
                "{\"format\":1,\"sandboxId\":\"../c\",\"hostName\":\"h\",\"ownerPid\":12,\"createdAt\":\"2026-01-01T00:00:00Z\",\"qemuBinary\":\"q\"}"}) {
            Files.writeString(s.ownerFile(), bad);
            assertThrows(IOException.class, s::owner, bad);
        }
        Files.write(s.ownerFile(), new byte[OwnerRecord.MAX_BYTES + 10]);
        assertThrows(IOException.class, s::owner);
    }

    @Test
    void pidFileIsParsedDefensively() throws Exception {
        SandboxState s = StateDirectory.at(tmp).create("d", "qemu", null);
        assertTrue(s.pidFromPidFile().isEmpty());
        Files.writeString(s.pidFile(), "4242\n");
        assertEquals(4242, s.pidFromPidFile().getAsLong());
        Files.writeString(s.pidFile(), "-1\n");
        assertTrue(s.pidFromPidFile().isEmpty());
        Files.writeString(s.pidFile(), "garbage");
        assertTrue(s.pidFromPidFile().isEmpty());
    }

    @Test
    void defaultRootFollowsTheEnvironment() {
        assertEquals(Path.of("/x/state"), StateDirectory.defaultRoot(Map.of("QVM_STATE", "/x/state"), "/home/u"));
        assertEquals(Path.of("/home/u/.local/state/qvm"), StateDirectory.defaultRoot(Map.of(), "/home/u"));
    }

    @Test
    void socketPathsAreShortAndChecked() {
        SocketPaths p = SocketPaths.forSandbox(Path.of("/tmp/qvm-0"), "abcdefghijkl");
        assertEquals(Path.of("/tmp/qvm-0/abcdefghijkl/qmp.sock"), p.qmp());
        assertEquals(Path.of("/tmp/qvm-0/abcdefghijkl/worker.sock"), p.worker());
        Path deep = Path.of("/home/someone/.local/state/qvm/" + "x".repeat(60));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SocketPaths.forSandbox(deep, "abcdefghijkl"));
        assertTrue(e.getMessage().contains("QVM_RUNTIME_DIR") && e.getMessage().contains("103"), e.getMessage());
        // the default root on this machine leaves room for the longest id
        SocketPaths.forSandbox("x".repeat(40));
    }

    @Test
    void defaultRuntimeRootFollowsTheEnvironment() {
        assertEquals(Path.of("/r/q"), SocketPaths.defaultRuntimeRoot(Map.of("QVM_RUNTIME_DIR", "/r/q", "XDG_RUNTIME_DIR", "/run/user/1"), "Linux"));
        assertEquals(Path.of("/run/user/1/qvm"), SocketPaths.defaultRuntimeRoot(Map.of("XDG_RUNTIME_DIR", "/run/user/1"), "Linux"));
        assertEquals(Path.of("/tmp/qvm-" + Posix.currentUid()), SocketPaths.defaultRuntimeRoot(Map.of(), "Mac OS X"));
    }

    @Test
    void runtimeDirectoriesArePrivateAndNotSymlinks() throws Exception {
        SocketPaths p = SocketPaths.forSandbox(tmp.resolve("run"), "sb").createDirectories();
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p.dir())));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p.dir().getParent())));
        Files.createDirectories(tmp.resolve("elsewhere"));
        Files.createSymbolicLink(tmp.resolve("link"), tmp.resolve("elsewhere"));
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> SocketPaths.forSandbox(tmp.resolve("link"), "sb").createDirectories());
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
        p.deleteDirectory();
        assertFalse(Files.exists(p.dir()));
    }

    @Test
    @Tag("security")
    void anExistingSharedRuntimeRootIsRefusedAndLeftAsItWas() throws Exception {
        // QVM_RUNTIME_DIR=/tmp as root: the directory exists, is ours, and is shared (1777 there, 0755 here)
        Path shared = Files.createDirectory(tmp.resolve("shared"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> SocketPaths.forSandbox(shared, "sb").createDirectories());
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
        assertTrue(e.getMessage().contains("rwxr-xr-x") && e.getMessage().contains("QVM_RUNTIME_DIR"), e.getMessage());
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(shared)),
                "the shared directory keeps its mode");
        assertFalse(Files.exists(shared.resolve("sb")), "nothing was created in it");
    }

    @Test
    void anExistingPrivateRuntimeRootOfOursIsUsed() throws Exception {
        Path mine = Files.createDirectory(tmp.resolve("mine"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        SocketPaths p = SocketPaths.forSandbox(mine, "sb").createDirectories();
        assertTrue(Files.isDirectory(p.dir()));
    }

    @Test
    @Tag("security")
    void sandboxStateDirectoriesAreCreatedPrivate() throws Exception {
        SandboxState s = StateDirectory.at(tmp.resolve("state")).create("sb9", "qemu", null);
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(s.dir())));
    }

    @Test
    @Tag("security")
    void aSharedSandboxesDirectoryIsRefused() throws Exception {
        Path sandboxes = Files.createDirectories(tmp.resolve("state2/sandboxes"));
        Files.setPosixFilePermissions(sandboxes, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertThrows(HostSetupException.class, () -> StateDirectory.at(tmp.resolve("state2")).create("x", "qemu", null));
        assertEquals("rwxrwxrwx", PosixFilePermissions.toString(Files.getPosixFilePermissions(sandboxes)));
    }

    @Test
    @Tag("security")
    void aSharedOrSymlinkedStateRootIsRefusedLeftAsItWasAndNeverListed() throws Exception {
        Path shared = Files.createDirectory(tmp.resolve("shared-state"));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        StateDirectory states = StateDirectory.at(shared);
        HostSetupException e = assertThrows(HostSetupException.class, () -> states.create("x", "qemu", null));
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
        assertTrue(e.getMessage().contains("rwxr-xr-x") && e.getMessage().contains("chmod 700 " + shared)
                && e.getMessage().contains("QVM_STATE"), e.getMessage());
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(shared)));
        assertFalse(Files.exists(shared.resolve("sandboxes")), "nothing was created in it");
        Files.createDirectories(shared.resolve("sandboxes/y"));
        assertThrows(HostSetupException.class, states::list, "nothing is read from it either");
        assertThrows(HostSetupException.class, () -> states.find("y"));

        Path link = Files.createSymbolicLink(tmp.resolve("state-link"), StateDirectory.at(tmp.resolve("real")).create(
                "z", "qemu", null).dir().getParent().getParent());
        assertThrows(HostSetupException.class, () -> StateDirectory.at(link).list());
        assertThrows(HostSetupException.class, () -> StateDirectory.at(link).create("w", "qemu", null));
    }

    @Test
    void aMissingStateRootListsNothingAndIsNotCreatedByReading() throws Exception {
        StateDirectory states = StateDirectory.at(tmp.resolve("absent"));
        assertEquals(List.of(), states.list());
        assertTrue(states.find("a").isEmpty());
        assertFalse(Files.exists(tmp.resolve("absent")));
        states.create("a", "qemu", null);
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tmp.resolve("absent"))));
    }

    @Test
    void ownerRecordRoundTrips() throws Exception {
        SandboxState s = StateDirectory.at(tmp).create("e", "/usr/bin/qemu-system-x86_64", null);
        Process p = processes.start("sleep", "600");
        s.recordQemu(p.toHandle());
        OwnerRecord o = s.owner();
        assertEquals(o, OwnerRecord.parse(o.toJson()));
        assertTrue(new String(o.toJson(), StandardCharsets.UTF_8).contains("\"format\" : 1"));
        p.destroyForcibly().waitFor(60, TimeUnit.SECONDS);
    }
}
