package io.qvm.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.internal.process.OwnerRecord;
import io.qvm.internal.process.ProcessTable;
import io.qvm.internal.process.SandboxState;
import io.qvm.internal.process.StateDirectory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code qvm down}'s stop of a live owner that has no control socket yet (booting) or whose socket
 * does not answer, with real processes playing the parts: an "owner" shell that starts its "QEMU"
 * ({@code sleep}), writes its pidfile and, once that QEMU is gone, removes the sandbox's state and
 * exits — what a qvm owner does when its boot fails. Windows is reached through
 * {@link ProcessTable#windowsShaped()} and {@code posixSignals=false}.
 */
@Tag("unit")
@Tag("fault")
class OwnerStopTest {

    private static final Duration LONG = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void killAll() throws Exception {
        for (Process p : started) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor();
        }
    }

    /** A booting sandbox: its owner (a shell) alive, its QEMU started and recorded, no ready.json. */
    private Process bootingOwner(SandboxState s, String onTerm) throws Exception {
        String dir = s.dir().toString();
        Process owner = new ProcessBuilder("sh", "-c", "trap '" + onTerm + "' TERM; sleep 600 & q=$!; echo $q > '"
                + s.pidFile() + "'; wait $q; rm -rf '" + dir + "'; exit 0")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        started.add(owner);
        await().atMost(LONG).until(() -> s.pidFromPidFile().isPresent());
        String json = Files.readString(s.ownerFile())
                .replaceAll("\"ownerPid\" : \\d+", "\"ownerPid\" : " + owner.pid())
                .replaceAll("\"ownerStartedAt\" : \"[^\"]*\"", "\"ownerStartedAt\" : \""
                        + owner.toHandle().info().startInstant().orElseThrow() + "\"");
        Files.writeString(s.ownerFile(), json);
        assertEquals(owner.pid(), s.owner().ownerPid());
        s.recordQemu(ProcessHandle.of(s.pidFromPidFile().getAsLong()).orElseThrow()); // as the owner does
        return owner;
    }

    private io.qvm.admin.SandboxRecord record(SandboxState s) {
        return io.qvm.admin.SandboxStates.at(tmp.resolve("state")).find(s.id()).orElseThrow();
    }

    private SandboxState sandbox(String id) throws Exception {
        return StateDirectory.at(tmp.resolve("state")).create(id, "sleep", null);
    }

    @Test
    void onWindowsABootingSandboxIsStoppedThroughItsQemuAndItsOwnerIsNeverTerminated() throws Exception {
        SandboxState s = sandbox("winboot");
        Process owner = bootingOwner(s, "exit 143");
        ProcessHandle qemu = ProcessHandle.of(s.owner().qemuPid()).orElseThrow();

        OwnerStop.Outcome o = new OwnerStop(false, io.qvm.admin.SandboxRecord.ProcessView.START_AND_EXECUTABLE_ONLY, LONG)
                .stop(record(s), owner.toHandle(), true, null);

        assertTrue(o.stopped(), o.detail());
        await().atMost(LONG).until(() -> !qemu.isAlive());
        await().atMost(LONG).until(() -> !owner.isAlive());
        assertEquals(0, owner.exitValue(), "the owner ended by itself, after its cleanup; it was never terminated");
        assertFalse(Files.exists(s.dir()), "its state is gone: " + o.detail());
    }

    @Test
    void onWindowsAnUnansweringSupervisorIsNotTerminatedAndTheAnswerSaysWhatToDo() throws Exception {
        SandboxState s = sandbox("winmute");
        Process owner = bootingOwner(s, "exit 143");
        long qemu = s.owner().qemuPid();

        OwnerStop.Outcome o = new OwnerStop(false, io.qvm.admin.SandboxRecord.ProcessView.START_AND_EXECUTABLE_ONLY, LONG)
                .stop(record(s), owner.toHandle(), false, "C:\\Users\\me\\AppData\\Local\\Temp\\qvm\\winmute\\ctl.sock");

        assertFalse(o.stopped(), o.detail());
        assertTrue(o.detail().contains("ctl.sock does not answer"), o.detail());
        assertTrue(o.detail().contains("taskkill /PID " + qemu), o.detail());
        assertTrue(o.detail().contains("qvm down winmute"), o.detail());
        assertTrue(owner.isAlive(), "TerminateProcess would skip its shutdown hook and leave QEMU running");
        assertTrue(ProcessHandle.of(qemu).map(ProcessHandle::isAlive).orElse(false));
    }

    @Test
    void onWindowsAPidThatCannotBeProvenIsNeverStopped() throws Exception {
        SandboxState s = sandbox("winproof");
        Process owner = bootingOwner(s, "exit 143");
        // a record without the executable (an older qvm's): no proof where there is no argv
        Files.writeString(s.ownerFile(), Files.readString(s.ownerFile())
                .replaceAll(",\\s*\"qemuExecutable\" : \"[^\"]*\"", ""));
        OwnerRecord o = s.owner();
        assertEquals(null, o.qemuExecutable());

        OwnerStop.Outcome r = new OwnerStop(false, io.qvm.admin.SandboxRecord.ProcessView.START_AND_EXECUTABLE_ONLY, LONG)
                .stop(record(s), owner.toHandle(), true, null);

        assertFalse(r.stopped(), r.detail());
        assertTrue(r.detail().contains("cannot be proven"), r.detail());
        assertTrue(ProcessHandle.of(o.qemuPid()).map(ProcessHandle::isAlive).orElse(false));
        assertTrue(owner.isAlive());
    }

    @Test
    void onPosixTheOwnerGetsSigtermAndItsHookStopsTheSandbox() throws Exception {
        SandboxState s = sandbox("posixboot");
        Process owner = bootingOwner(s, "kill $q"); // then its cleanup runs: rm -rf <state dir>; exit 0

        OwnerStop.Outcome o = new OwnerStop(true, io.qvm.admin.SandboxRecord.ProcessView.HOST, LONG)
                .stop(record(s), owner.toHandle(), true, null);

        assertTrue(o.stopped(), o.detail());
        assertTrue(o.detail().contains("SIGTERM"), o.detail());
        await().atMost(LONG).until(() -> !owner.isAlive());
        assertEquals(0, owner.exitValue(), "its TERM handler (the shutdown hook's part) ran");
        assertFalse(Files.exists(s.dir()));
    }

    @Test
    void anOwnerThatRecordedItIsTheCliIsKnownAsSuchWithoutReadingItsCommandLine() throws Exception {
        SandboxState s = sandbox("cliowner");
        Process owner = bootingOwner(s, "exit 143"); // a shell: its command line does not say qvm
        assertEquals("unmanaged", Sandboxes.describe(record(s)).status(), "without the record, a stranger");

        Files.writeString(s.ownerFile(), Files.readString(s.ownerFile())
                .replace("\"format\" : 1,", "\"format\" : 1, \"ownerProgram\" : \"" + Sandboxes.CLI_PROGRAM + "\","));

        assertEquals(Sandboxes.CLI_PROGRAM, s.owner().ownerProgram());
        assertEquals("booting", Sandboxes.describe(record(s)).status(), "what Windows needs: no argv is read");
        assertTrue(owner.isAlive());
    }
}
