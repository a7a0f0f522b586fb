package io.qvm.cli;

import io.qvm.admin.SandboxRecord;
import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * How {@code qvm down} stops the live qvm process that owns a sandbox when it cannot ask over a
 * control socket (the sandbox is still booting, or the socket does not answer). Never by
 * {@link ProcessHandle#destroy()} on Windows: there it is TerminateProcess, which skips the
 * owner's shutdown hook and leaves its QEMU running.
 *
 * <ul>
 *   <li>POSIX: SIGTERM to the owner, whose shutdown hook stops its sandbox (QMP quit first, see
 *       {@code StopLadder}); SIGKILL only after {@code exitDeadline}, and then the reaper stops the
 *       QEMU it left.
 *   <li>Windows, booting: the owner is left alone; its QEMU is stopped instead, and only once it is
 *       proven to be this sandbox's ({@link QemuIdentity}: recorded start instant plus recorded
 *       executable). Its owner's boot then fails, and the owner removes the sandbox's state and
 *       exits by itself, as after any failed boot. QMP quit is not possible here: the booting
 *       owner holds QEMU's one QMP connection. (Untested on a real Windows host.)
 *   <li>Windows, running but the control socket does not answer: nothing is stopped; the
 *       answer says so and what to do.
 * </ul>
 */
final class OwnerStop {

    private final boolean posixSignals;
    private final SandboxRecord.ProcessView processes;
    private final Duration exitDeadline;

    /** @param posixSignals whether {@code destroy()} is SIGTERM here (false on Windows) */
    OwnerStop(boolean posixSignals, SandboxRecord.ProcessView processes, Duration exitDeadline) {
        this.posixSignals = posixSignals;
        this.processes = Objects.requireNonNull(processes, "processes");
        this.exitDeadline = Objects.requireNonNull(exitDeadline, "exitDeadline");
    }

    /** This host. */
    static OwnerStop system(Duration exitDeadline) {
        return new OwnerStop(!windows(System.getProperty("os.name", "")), SandboxRecord.ProcessView.HOST, exitDeadline);
    }

    static boolean windows(String osName) {
        return osName.startsWith("Windows");
    }

    /** What was done (a sentence), or why nothing could be. */
    record Outcome(boolean stopped, String detail) {
    }

    /**
     * Stops {@code owner}, the live qvm process owning {@code state}.
     *
     * @param booting whether the sandbox has no control socket yet (else: it has one that does not answer)
     * @param controlSocket the socket that did not answer, for the message (null when booting)
     */
    Outcome stop(SandboxRecord state, ProcessHandle owner, boolean booting, String controlSocket)
            throws InterruptedException {
        if (posixSignals) {
            owner.destroy(); // SIGTERM: the owner's shutdown hook stops its sandbox
            if (!waitForExit(owner, exitDeadline)) {
                owner.destroyForcibly(); // what it leaves, the reaper stops
                waitForExit(owner, exitDeadline);
                return new Outcome(true, "sent SIGTERM to its owner pid " + owner.pid() + ", which did not exit within "
                        + exitDeadline.toSeconds() + " s, then SIGKILL");
            }
            return new Outcome(true, "sent SIGTERM to its owner pid " + owner.pid() + ", whose shutdown hook stopped it");
        }
        if (!booting) {
            Long qemu = state.qemuPid().isPresent() ? state.qemuPid().getAsLong() : null;
            return new Outcome(false, "its control socket " + controlSocket + " does not answer, and on Windows qvm "
                    + "stops its supervisor (pid " + owner.pid() + ") only through that socket: ending the process "
                    + "otherwise (TerminateProcess) would skip its shutdown hook and leave QEMU running. Wait for its "
                    + "--idle-timeout or --max-lifetime, or end it yourself: "
                    + (qemu != null ? "taskkill /PID " + qemu + " (its QEMU) first, then " : "")
                    + "taskkill /PID " + owner.pid() + ", then run qvm down " + state.id() + " again to clean up");
        }
        return stopBootingQemu(state, owner);
    }

    private Outcome stopBootingQemu(SandboxRecord state, ProcessHandle owner) throws InterruptedException {
        long deadline = System.nanoTime() + exitDeadline.toNanos();
        while (true) {
            if (!owner.isAlive()) {
                return new Outcome(true, "its owner pid " + owner.pid() + " ended by itself");
            }
            SandboxRecord.QemuProcess qemu;
            try {
                qemu = state.qemu(processes);
            } catch (IOException gone) {
                waitForExit(owner, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                return new Outcome(true, "its owner pid " + owner.pid() + " removed it");
            }
            if (qemu.process().isPresent()) {
                long pid = qemu.process().get().pid();
                qemu.process().get().destroyForcibly();
                if (waitForExit(owner, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())))) {
                    return new Outcome(true, "stopped its QEMU pid " + pid + " (proven by its start "
                            + "instant and executable); its owner pid " + owner.pid() + " then ended its boot, "
                            + "removed it and exited");
                }
                return new Outcome(false, "stopped its QEMU pid " + pid + ", but its owner pid "
                        + owner.pid() + " did not exit within " + exitDeadline.toSeconds() + " s");
            }
            Optional<String> why = qemu.notIt().or(qemu::unproven);
            if (why.isPresent()) {
                if (qemu.recorded() || qemu.notIt().isPresent()) {
                    return new Outcome(false, "its QEMU pid " + qemu.pid().getAsLong() + " cannot be proven to be this "
                            + "sandbox's (" + why.get() + "); nothing was stopped. Stop its owner "
                            + "pid " + owner.pid() + " from its console (Ctrl-C), then run qvm down " + state.id()
                            + " again");
                }
                // only the pidfile names it yet: the owner records pid, start and executable next
            }
            if (System.nanoTime() - deadline >= 0) {
                return new Outcome(false, "its QEMU did not start within " + exitDeadline.toSeconds() + " s, and on "
                        + "Windows qvm does not end its owner pid " + owner.pid() + " any other way (TerminateProcess "
                        + "would skip its shutdown hook); stop it from its console (Ctrl-C), then run qvm down "
                        + state.id() + " again");
            }
            Thread.sleep(100);
        }
    }

    /** Whether {@code p} exited within {@code wait} (also {@link DetachLauncher}'s wait for its supervisor). */
    static boolean waitForExit(ProcessHandle p, Duration wait) throws InterruptedException {
        try {
            p.onExit().get(wait.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException | ExecutionException e) {
            return !p.isAlive();
        }
    }
}
