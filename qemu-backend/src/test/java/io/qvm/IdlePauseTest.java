package io.qvm;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.internal.sandbox.QemuSandbox;
import io.qvm.protocol.WorkerStatus;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link SandboxConfig#idlePause()} against {@link FakeQemu}, whose guest clock stands still
 * while the VM is stopped, as a real guest's does: an idle sandbox is stopped over QMP, the next
 * request resumes it and has the init set the clock before the request goes out, a sandbox that
 * cannot be resumed is lost with its reason, and nothing is left behind.
 */
@Tag("unit")
class IdlePauseTest extends FakeQemuFixture {

    @Test
    void anIdleSandboxIsStoppedAndTheNextRequestResumesItWithItsClockSet() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(200)).build())) {
            QemuSandbox q = (QemuSandbox) s;
            await().atMost(LONG).until(q::paused);
            assertEquals("qmp stop", last(host.vmLog()), "stopped over QMP once idle");
            Thread.sleep(2500); // the fake guest's clock stands still meanwhile, as a real one's does

            long before = System.currentTimeMillis();
            WorkerStatus st = s.status();
            long after = System.currentTimeMillis();
            assertTrue(st.wallClockMillis() >= before - 100 && st.wallClockMillis() <= after + 100,
                    "the clock was stepped by the pause on resume: " + (st.wallClockMillis() - before) + " ms off after"
                    + " 2.5 s paused");
            List<String> log = host.vmLog();
            List<String> sinceStop = log.subList(log.lastIndexOf("qmp stop") + 1, log.size());
            assertEquals(List.of("qmp cont", "control step"), sinceStop.subList(0, 2),
                    "resumed, then the clock stepped, before the request: " + log);
            long first = host.steps().get(0);
            assertTrue(first >= 2_500_000 && first < 10_000_000, "the first step is how long it stood still: " + first);
            assertEquals(1, q.pauses());
            assertTrue(q.lastResume().toNanos() > 0);

            // busy sandboxes are not paused under a request, and it pauses again afterwards
            assertArrayEquals(new byte[] {5}, s.echo(new byte[] {5}));
            await().atMost(LONG).until(q::paused);
            assertEquals(2, q.pauses());
            assertArrayEquals(new byte[] {6}, s.echo(new byte[] {6}));
        }
    }

    @Test
    void aPausedSandboxClosesWithoutAGoodbye() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build()) {
            Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(100)).build());
            QemuSandbox q = (QemuSandbox) s;
            await().atMost(LONG).until(q::paused);
            s.close();
            assertEquals("quit", q.stopReport().orElseThrow().stoppedBy(),
                    "nothing in a stopped guest reads a GOODBYE: " + q.stopReport());
            assertFalse(host.vmLog().contains("qmp cont"), "closing does not resume it");
        }
    }

    @Test
    void zeroNeverPauses() throws Exception {
        try (QemuVmBackend backend = host.backend().templates(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ZERO).build())) {
            s.echo(new byte[] {1});
            Thread.sleep(1500);
            assertFalse(((QemuSandbox) s).paused());
            assertFalse(host.vmLog().contains("qmp stop"), String.valueOf(host.vmLog()));
        }
    }

    @Test
    void aSandboxThatCannotBeResumedIsLostAndNothingIsSent() throws Exception {
        host.set("step", "silent");
        try (QemuVmBackend backend = host.backend().templates(false).build()) {
            Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(100))
                    .requestTimeout(Duration.ofSeconds(1)).build());
            await().atMost(LONG).until(((QemuSandbox) s)::paused);
            SandboxLostException e = assertThrows(SandboxLostException.class, () -> s.echo(new byte[] {9}));
            assertEquals(SandboxLostException.Reason.CRASHED, e.reason());
            assertTrue(e.getMessage().contains("could not be resumed"), e.getMessage());
            assertTrue(e.getMessage().contains("idlePause(Duration.ZERO)"), "says what to do: " + e.getMessage());
            assertFalse(s.isAlive());
            s.close();
        }
    }

    @Test
    void aGuestWhoseClockCannotBeSteppedOnResumeIsLostAndSaysWhy() throws Exception {
        for (String step : List.of("fail", "stuck")) {
            host.set("step", step);
            try (QemuVmBackend backend = host.backend().templates(false).build()) {
                Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(100)).build());
                await().atMost(LONG).until(((QemuSandbox) s)::paused);
                Thread.sleep(2000); // stuck: the clock stays the pause's, 2 s behind
                SandboxLostException e = assertThrows(SandboxLostException.class, () -> s.echo(new byte[] {9}));
                assertTrue(e.getMessage().contains(step.equals("fail") ? "step-failed" : "the guest's clock is still"),
                        e.getMessage());
                assertFalse(s.isAlive());
                s.close();
            }
        }
    }

    @Test
    void anImageWhoseInitPredatesStepHasItsClockSetToTheSecond() throws Exception {
        host.set("step", "unknown");
        try (QemuVmBackend backend = host.backend().templates(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(100)).build())) {
            await().atMost(LONG).until(((QemuSandbox) s)::paused);
            Thread.sleep(2000);
            WorkerStatus st = s.status();
            assertTrue(Math.abs(System.currentTimeMillis() - st.wallClockMillis()) < 1200, "set to the second: "
                    + (st.wallClockMillis() - System.currentTimeMillis()) + " ms off");
            List<String> log = host.vmLog();
            assertTrue(log.subList(log.lastIndexOf("qmp cont"), log.size()).contains("control setclock"), log::toString);
            assertTrue(((QemuSandbox) s).lastClock().isEmpty());
        }
    }

    @Test
    void anImageWhoseInitPredatesSetclockStillResumesWithTheClockOfItsPause() throws Exception {
        host.set("step", "unknown").set("setclock", "unknown");
        try (QemuVmBackend backend = host.backend().templates(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(100)).build())) {
            await().atMost(LONG).until(((QemuSandbox) s)::paused);
            Thread.sleep(2000);
            WorkerStatus st = s.status();
            assertTrue(s.isAlive(), "not lost for an init that does not know the word");
            long lag = System.currentTimeMillis() - st.wallClockMillis();
            assertTrue(lag >= 1500, "its clock is the pause's: " + lag + " ms behind");
            assertArrayEquals(new byte[] {2}, s.echo(new byte[] {2}));
        }
    }

    @Test
    void aTemplateVmIsNeverPausedWhileItIsSaved() throws Exception {
        host.set("migrateMillis", "1500"); // the save outlasts the idle pause many times over
        try (QemuVmBackend backend = host.backend().build()) {
            SandboxConfig config = FakeQemuHost.config().idlePause(Duration.ofMillis(100)).build();
            try (Sandbox clone = backend.start(config)) {
                assertTrue(clone.bootReport().restored(), clone.bootReport().notes().toString());
                assertArrayEquals(new byte[] {3}, clone.echo(new byte[] {3}));
            }
            List<String> log = host.vmLog();
            List<String> templateVm = log.subList(0, log.indexOf("qmp quit"));
            assertTrue(templateVm.contains("qmp migrate"), "the template was saved: " + log);
            assertEquals(1, templateVm.stream().filter("qmp stop"::equals).count(),
                    "the save's own stop, and no idle pause of the template VM: " + templateVm);
        }
    }

    /** What the check after a pause allows, for a fake whose spin burns a whole core: 150 ms of CPU in 0.5 s. */
    private static final QemuSandbox.PauseCheck FAKE_CHECK = new QemuSandbox.PauseCheck(Duration.ofMillis(100),
            Duration.ofMillis(500), Duration.ofMillis(150), 3);

    @Test
    void aPauseThatLeavesQemuBusyIsRedoneUntilItKeepsStill() throws Exception {
        host.set("pausedSpin", "2"); // the first two stops leave the fake burning a core
        try (QemuVmBackend backend = host.backend().pauseCheck(FAKE_CHECK).templates(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(200)).build())) {
            QemuSandbox q = (QemuSandbox) s;
            await().atMost(LONG).until(() -> q.repauses() == 2);
            long pid = io.qvm.admin.BackendAdmin.qemuPid(s).orElseThrow();
            Duration a = ProcessHandle.of(pid).orElseThrow().info().totalCpuDuration().orElseThrow();
            Thread.sleep(1500); // two more checks: the third stop keeps still, so nothing is redone
            Duration b = ProcessHandle.of(pid).orElseThrow().info().totalCpuDuration().orElseThrow();
            assertEquals(2, q.repauses(), "redone while it spun, and no more");
            assertTrue(b.minus(a).toMillis() < 750, "the fake keeps still after the last stop: " + b.minus(a));
            assertTrue(q.paused());
            assertEquals(1, q.pauses(), "one idle pause, redone twice");
            assertEquals(List.of("qmp stop", "qmp cont", "qmp stop", "qmp cont", "qmp stop"),
                    host.vmLog().subList(host.vmLog().indexOf("qmp stop"), host.vmLog().size()),
                    "each redo is a cont and a stop, and nothing else reached the guest");

            assertArrayEquals(new byte[] {7}, s.echo(new byte[] {7}));
            long first = host.steps().get(0);
            assertTrue(first >= 2_500_000, "the clock is stepped by the time it stood still, the redone pauses"
                    + " included: " + first + " µs");
        }
    }

    @Test
    void aQemuThatStaysBusyWhilePausedIsLeftPausedAfterItsRetriesAndStillServes() throws Exception {
        host.set("pausedSpin", "1000");
        QemuSandbox.PauseCheck twice = new QemuSandbox.PauseCheck(FAKE_CHECK.settle(), FAKE_CHECK.window(),
                FAKE_CHECK.maxCpu(), 2);
        try (QemuVmBackend backend = host.backend().pauseCheck(twice).templates(false).build();
             Sandbox s = backend.start(FakeQemuHost.config().idlePause(Duration.ofMillis(200)).build())) {
            QemuSandbox q = (QemuSandbox) s;
            await().atMost(LONG).until(() -> q.repauses() == 2);
            Thread.sleep(1500); // past two more checks' time: the retries are spent, it is left as it is
            assertEquals(2, q.repauses());
            assertTrue(q.paused());
            assertArrayEquals(new byte[] {8}, s.echo(new byte[] {8}), "a request resumes it as usual");
            await().atMost(LONG).until(() -> q.pauses() == 2 && q.repauses() == 4); // a new pause, checked afresh
        }
    }

    @Test
    void aPauseCheckIsNeverNegative() {
        assertThrows(IllegalArgumentException.class, () -> new QemuSandbox.PauseCheck(Duration.ofMillis(-1),
                Duration.ofSeconds(1), Duration.ofMillis(1), 1));
        assertThrows(IllegalArgumentException.class, () -> new QemuSandbox.PauseCheck(Duration.ZERO,
                Duration.ofSeconds(1), Duration.ofMillis(-1), 1));
        assertThrows(IllegalArgumentException.class, () -> new QemuSandbox.PauseCheck(Duration.ZERO,
                Duration.ofSeconds(1), Duration.ofMillis(1), -1));
    }

    private static String last(List<String> l) {
        return l.isEmpty() ? "" : l.get(l.size() - 1);
    }

}
