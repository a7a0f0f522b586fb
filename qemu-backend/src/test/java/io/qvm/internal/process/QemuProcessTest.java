package io.qvm.internal.process;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qvm.internal.qmp.QmpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class QemuProcessTest {

    private static final Duration LONG = Duration.ofSeconds(60);

    @TempDir
    Path tmp;

    private final TestProcesses processes = new TestProcesses();

    @AfterEach
    void cleanUp() throws Exception {
        processes.close();
    }

    private QemuProcess start(String... argv) throws QemuProcessException {
        return processes.track(QemuProcess.launcher(List.of(argv))
                .stdout(tmp.resolve("out.log"))
                .stderr(tmp.resolve("qemu-stderr.log"))
                .console(tmp.resolve("console.log"))
                .start());
    }

    @Test
    void watchesTheExitAndCapturesBothStreams() throws Exception {
        QemuProcess p = start("sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3");
        ExitInfo exit = p.onExit().get(60, TimeUnit.SECONDS);
        assertEquals(3, exit.exitCode());
        assertEquals(OptionalInt.empty(), exit.signal());
        assertEquals("exited with code 3", exit.describe());
        assertEquals("to-stdout\n", Files.readString(p.stdoutLog()));
        assertEquals("to-stderr\n", Files.readString(p.stderrLog()));
        assertFalse(p.isAlive());
        assertEquals(exit, p.exitInfo().orElseThrow());
    }

    @Test
    @Tag("security")
    void qemuGetsAMinimalEnvironmentNotTheHosts() throws Exception {
        assumeTrue(System.getenv("PATH") != null, "the test JVM has a PATH to leave out");
        QemuProcess p = start("env");
        assertEquals(0, p.onExit().get(60, TimeUnit.SECONDS).exitCode());
        assertEquals(List.of("LC_ALL=C"), Files.readAllLines(p.stdoutLog()));
    }

    @Test
    void anAddedVariableJoinsTheMinimalEnvironment() throws Exception {
        QemuProcess p = processes.track(QemuProcess.launcher(List.of("env")).environment("QVM_X", "1")
                .stdout(tmp.resolve("out.log")).stderr(tmp.resolve("err.log")).start());
        p.onExit().get(60, TimeUnit.SECONDS);
        assertEquals(java.util.Set.of("LC_ALL=C", "QVM_X=1"), java.util.Set.copyOf(Files.readAllLines(p.stdoutLog())));
    }

    @Test
    void stdinReadsTheGivenFileToItsEnd() throws Exception {
        byte[] data = new byte[3 << 20];
        new java.util.Random(7).nextBytes(data);
        Path file = Files.write(tmp.resolve("state"), data);
        Path copy = tmp.resolve("copy");
        QemuProcess p = processes.track(QemuProcess.launcher(List.of("sh", "-c", "cat > '" + copy + "'")).stdin(file)
                .stdout(tmp.resolve("out.log")).stderr(tmp.resolve("err.log")).start());
        assertEquals(0, p.onExit().get(60, TimeUnit.SECONDS).exitCode());
        assertTrue(java.util.Arrays.equals(data, Files.readAllBytes(copy)));
    }

    @Test
    void argumentsArePassedVerbatim() throws Exception {
        QemuProcess p = start("sh", "-c", "printf '%s|' \"$@\"", "sh", "a b", "\"quoted\"", "$HOME", "");
        p.onExit().get(60, TimeUnit.SECONDS);
        assertEquals("a b|\"quoted\"|$HOME||", Files.readString(p.stdoutLog()));
    }

    @Test
    void failureCarriesExitAndTails() throws Exception {
        Files.writeString(tmp.resolve("console.log"), "qvm: phase=init uptime=0.50\n\u001b[2Jqvm: error=no port\n");
        QemuProcess p = start("sh", "-c", "echo 'qemu: could not load kernel' >&2; exit 1");
        p.onExit().get(60, TimeUnit.SECONDS);
        QemuProcessException e = p.failure("guest did not become ready");
        assertEquals("guest did not become ready", e.reason());
        assertEquals(1, e.exit().orElseThrow().exitCode());
        assertTrue(e.stderrTail().contains("could not load kernel"), e.stderrTail());
        assertTrue(e.consoleTail().contains("qvm: error=no port"), e.consoleTail());
        assertTrue(e.consoleTail().contains("\\x1b[2J"), "escape sequences are neutralised: " + e.consoleTail());
        assertTrue(e.getMessage().contains("exited with code 1") && e.getMessage().contains("could not load kernel"),
                e.getMessage());
    }

    @Test
    void missingBinaryIsAClearStartFailure() {
        QemuProcessException e = assertThrows(QemuProcessException.class,
                () -> start(tmp.resolve("no-such-qemu").toString(), "-version"));
        assertTrue(e.getMessage().contains("no-such-qemu"), e.getMessage());
    }

    @Test
    void stderrIsCappedNotUnbounded() throws Exception {
        QemuProcess p = processes.track(QemuProcess.launcher(List.of("sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a >&2"))
                .stdout(tmp.resolve("o.log")).stderr(tmp.resolve("e.log")).maxLogBytes(4096).start());
        p.onExit().get(60, TimeUnit.SECONDS);
        String err = Files.readString(p.stderrLog());
        assertTrue(err.startsWith("a".repeat(4096)));
        assertTrue(err.endsWith("[qvm: output truncated after 4096 bytes]\n"), err.substring(4096));
        assertTrue(err.length() < 4096 + 100);
    }

    @Test
    void ladderEndsWithSigkillForAProcessIgnoringSigterm() throws Exception {
        Path ready = tmp.resolve("ready");
        QemuProcess p = start("sh", "-c", "trap '' TERM; touch '" + ready + "'; exec sleep 600");
        await().atMost(LONG).until(() -> Files.exists(ready));
        StopLadder ladder = StopLadder.builder()
                .step("graceful", () -> { }, Duration.ofMillis(200))
                .terminate(Duration.ofMillis(500))
                .kill(LONG)
                .build();
        StopReport report = p.stop(ladder);
        assertTrue(report.exited());
        assertEquals("SIGKILL", report.stoppedBy());
        assertTrue(report.neededKill());
        assertEquals(List.of("graceful", "SIGTERM", "SIGKILL"), report.steps().stream().map(StopReport.StepResult::step).toList());
        assertEquals(OptionalInt.of(9), p.onExit().get(60, TimeUnit.SECONDS).signal());
        assertEquals("killed by signal 9 (SIGKILL)", p.exitInfo().orElseThrow().describe());
    }

    @Test
    void anInterruptedStopSkipsThePoliteWaitsButWaitsOutTheKillAndKeepsTheInterrupt() throws Exception {
        Path ready = tmp.resolve("ready");
        QemuProcess p = start("sh", "-c", "trap '' TERM; touch '" + ready + "'; exec sleep 600");
        await().atMost(LONG).until(() -> Files.exists(ready));
        StopLadder ladder = StopLadder.builder()
                .step("graceful", () -> { }, LONG)
                .terminate(LONG)
                .kill(LONG)
                .build();
        long t0 = System.nanoTime();
        Thread.currentThread().interrupt(); // a pool closing, cancelling the thread that starts this VM
        StopReport report;
        try {
            report = p.stop(ladder);
        } finally {
            assertTrue(Thread.interrupted(), "the caller's interrupt is kept");
        }
        assertTrue(report.exited(), "reported gone, not 'survived SIGKILL': " + report);
        assertEquals("SIGKILL", report.stoppedBy());
        assertTrue(System.nanoTime() - t0 < LONG.toNanos(), "no 30 s wait for a polite step");
        assertFalse(p.isAlive());
    }

    @Test
    void failingGracefulStepFallsThroughToSigterm() throws Exception {
        QemuProcess p = start("sleep", "600");
        StopLadder ladder = StopLadder.builder()
                .step("system_powerdown", () -> {
                    throw new IllegalStateException("QMP is gone");
                }, LONG)
                .terminate(LONG)
                .kill(LONG)
                .build();
        StopReport report = p.stop(ladder);
        assertEquals("SIGTERM", report.stoppedBy());
        assertTrue(report.steps().get(0).detail().contains("QMP is gone"), report.toString());
        assertEquals(OptionalInt.of(15), p.exitInfo().orElseThrow().signal());
    }

    @Test
    void stopIsIdempotentAndCloseAfterStopIsANoOp() throws Exception {
        QemuProcess p = start("sleep", "600");
        StopReport first = p.stop(StopLadder.signalsOnly());
        assertSame(first, p.stop(StopLadder.signalsOnly()));
        p.close();
        p.close();
        assertSame(first, p.stop(StopLadder.signalsOnly()));
    }

    @Test
    void stoppingAnExitedProcessSendsNothing() throws Exception {
        QemuProcess p = start("true");
        p.onExit().get(60, TimeUnit.SECONDS);
        StopReport report = p.stop(StopLadder.signalsOnly());
        assertTrue(report.exited());
        assertEquals(StopReport.ALREADY_EXITED, report.stoppedBy());
        assertTrue(report.steps().isEmpty());
    }

    @Test
    @Tag("qemu")
    void realQemuStopsAtTheQmpQuitRung() throws Exception {
        String qemu = TestProcesses.qemuBinary();
        assumeTrue(qemu != null, "qemu-system-x86_64 is not on PATH; install package qemu-system-x86 to run this test");
        Path sock = tmp.resolve("qmp.sock");
        Path pidFile = tmp.resolve("qemu.pid");
        QemuProcess p = start(qemu, "-M", "none", "-nodefaults", "-no-user-config", "-display", "none",
                "-pidfile", pidFile.toString(), "-qmp", "unix:" + sock + ",server=on,wait=off");
        try (QmpClient qmp = QmpClient.builder(sock).connectTimeout(LONG).processAlive(p::isAlive).connect()) {
            assertEquals(String.valueOf(p.pid()), Files.readString(pidFile).strip(), "QEMU's pidfile names our pid");
            StopReport report = p.stop(StopLadder.builder()
                    .step("quit", () -> qmp.quit(LONG), LONG)
                    .terminate(LONG)
                    .kill(LONG)
                    .build());
            assertEquals("quit", report.stoppedBy(), report.toString());
            assertEquals(0, p.exitInfo().orElseThrow().exitCode());
        }
    }

    @Test
    void launcherValidatesItsArguments() {
        assertThrows(IllegalArgumentException.class, () -> QemuProcess.launcher(List.of()));
        assertThrows(IllegalArgumentException.class, () -> QemuProcess.launcher(List.of("qemu", "a\0b")));
        assertThrows(IllegalStateException.class, () -> QemuProcess.launcher(List.of("true")).start());
        assertThrows(IllegalArgumentException.class, () -> StopLadder.builder().terminate(Duration.ZERO));
        assertThrows(IllegalStateException.class, () -> StopLadder.builder().build());
    }
}
