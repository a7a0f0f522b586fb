package io.qvm.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How {@code qvm up --detach} stops a supervisor that is not ready when its {@code --wait} passes
 * or it is interrupted ({@link DetachLauncher#stopSupervisor}): through the launch directory, so
 * that the supervisor's own shutdown hook runs on every host, and on Windows never by ending the
 * process (TerminateProcess would skip that hook and leave QEMU running). The supervisor is a real
 * process ({@link StopPeer}) running the real {@link Launch.StopWatch}; "Windows" is the seam
 * {@code posix=false}.
 */
@Tag("unit")
class SupervisorStopTest {

    @TempDir
    Path tmp;

    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void killPeers() {
        started.forEach(Process::destroyForcibly);
    }

    private Process peer(Path launchDir, String mode) throws Exception {
        Files.createDirectories(launchDir);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), StopPeer.class.getName(),
                launchDir.toString(), mode, hookRan().toString()).redirectErrorStream(true)
                .redirectOutput(tmp.resolve("peer.log").toFile()).redirectInput(new File("/dev/null")).start();
        started.add(p);
        await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(launchDir.resolve("started")) || !p.isAlive());
        assertTrue(p.isAlive(), "the peer runs: " + Files.readString(tmp.resolve("peer.log")));
        return p;
    }

    private Path hookRan() {
        return tmp.resolve("hook-ran");
    }

    @Test
    void onWindowsAStopRequestEndsTheSupervisorThroughItsOwnShutdownHook() throws Exception {
        Path dir = tmp.resolve("launch");
        Process p = peer(dir, "watch");
        String how = DetachLauncher.stopSupervisor(p.toHandle(), dir, false, Duration.ofSeconds(60));
        assertTrue(p.waitFor(10, TimeUnit.SECONDS));
        assertEquals(ExitCode.BOOT_FAILED.code(), p.exitValue(), "it exited by itself, not TerminateProcess");
        assertTrue(Files.exists(hookRan()), "its shutdown hook (which stops the sandbox) ran");
        assertTrue(how.contains("was stopped by a stop request in its launch directory"), how);
        assertTrue(Files.exists(dir.resolve(Launch.STOP)));
    }

    @Test
    void onWindowsASupervisorThatDoesNotStopIsNeverTerminated() throws Exception {
        Path dir = tmp.resolve("launch");
        Process p = peer(dir, "ignore");
        String how = DetachLauncher.stopSupervisor(p.toHandle(), dir, false, Duration.ofSeconds(2));
        assertTrue(p.isAlive(), "no TerminateProcess: " + how);
        assertFalse(Files.exists(hookRan()));
        assertTrue(how.contains("did not stop within 2 s") && how.contains("TerminateProcess")
                && how.contains("qvm down --all"), how);
    }

    @Test
    void onPosixASupervisorThatDoesNotStopGetsSigtermWhichRunsItsHook() throws Exception {
        Path dir = tmp.resolve("launch");
        Process p = peer(dir, "ignore");
        String how = DetachLauncher.stopSupervisor(p.toHandle(), dir, true, Duration.ofSeconds(2));
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertTrue(Files.exists(hookRan()), "SIGTERM runs the shutdown hook");
        assertTrue(how.contains("was sent SIGTERM"), how);
    }

    @Test
    void theWatchFiresWhenTheLaunchDirectoryIsGoneAndNotAfterItEnded() throws Exception {
        Path gone = Files.createDirectories(tmp.resolve("gone"));
        CountDownLatch fired = new CountDownLatch(1);
        Launch.StopWatch w = Launch.StopWatch.start(gone, fired::countDown);
        assertFalse(w.requested());
        Files.delete(gone);
        assertTrue(fired.await(30, TimeUnit.SECONDS), "nobody waits for it: it stops");
        assertTrue(w.end(), "end() says a stop was asked for");

        Path kept = Files.createDirectories(tmp.resolve("kept"));
        CountDownLatch never = new CountDownLatch(1);
        Launch.StopWatch ended = Launch.StopWatch.start(kept, never::countDown);
        assertFalse(ended.end(), "no stop was asked for");
        Launch.requestStop(kept);
        Launch.requestStop(kept); // idempotent
        assertFalse(never.await(Launch.STOP_POLL.multipliedBy(5).toMillis(), TimeUnit.MILLISECONDS),
                "an ended watch (the supervisor is ready) does not fire");
    }
}
