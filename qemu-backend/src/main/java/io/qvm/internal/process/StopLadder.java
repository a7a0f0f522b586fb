package io.qvm.internal.process;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The order in which qvm stops a QEMU: polite first, forceful last, each rung with a deadline.
 *
 * <pre>
 *  graceful action (e.g. QMP system_powerdown) ── wait ──┐ exited? done
 *  QMP quit                                     ── wait ──┤ exited? done
 *  SIGTERM  (ProcessHandle.destroy)             ── wait ──┤ exited? done
 *  SIGKILL  (ProcessHandle.destroyForcibly)     ── wait ──┘ exited? done, else report "survived"
 * </pre>
 *
 * <pre>{@code
 * StopLadder ladder = StopLadder.builder()
 *         .step("system_powerdown", qmp::systemPowerdown, Duration.ofSeconds(10))
 *         .step("quit", () -> qmp.quit(Duration.ofSeconds(2)), Duration.ofSeconds(5))
 *         .terminate(Duration.ofSeconds(5))
 *         .kill(Duration.ofSeconds(10))
 *         .build();
 * StopReport report = qemu.stop(ladder);   // idempotent on QemuProcess
 * }</pre>
 *
 * A step whose action throws is recorded and the ladder moves on at once (a dead QMP socket must
 * not delay the signals). Immutable and reusable; {@link #run} is safe to call on a process that
 * already exited (the report says so and nothing is sent).
 */
public final class StopLadder {

    public static final Duration DEFAULT_TERM_WAIT = Duration.ofSeconds(10);
    public static final Duration DEFAULT_KILL_WAIT = Duration.ofSeconds(10);

    private static final System.Logger LOG = System.getLogger(StopLadder.class.getName());

    /** An action of a graceful step (e.g. sending a QMP command). */
    @FunctionalInterface
    public interface StopAction {
        void run() throws Exception;
    }

    /** A caller action ({@code signal == null}) or a signal ({@code signal} = force?). */
    private record Step(String name, StopAction action, Boolean forceSignal, Duration waitAfter) {}

    private final List<Step> steps;

    private StopLadder(List<Step> steps) {
        this.steps = List.copyOf(steps);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** SIGTERM, wait 10 s, SIGKILL, wait 10 s: for when there is no QMP connection. */
    public static StopLadder signalsOnly() {
        return builder().terminate(DEFAULT_TERM_WAIT).kill(DEFAULT_KILL_WAIT).build();
    }

    /** The step names in order, e.g. {@code [system_powerdown, quit, SIGTERM, SIGKILL]}. */
    public List<String> stepNames() {
        return steps.stream().map(Step::name).toList();
    }

    /** Runs the ladder against {@code target}, waiting on {@code target.onExit()}. */
    public StopReport run(ProcessHandle target) {
        return run(target, target.onExit());
    }

    /**
     * Runs the ladder against {@code target}; {@code exited} completes when the process is gone
     * (for a {@link QemuProcess}, after its logs were drained).
     */
    public StopReport run(ProcessHandle target, CompletableFuture<?> exited) {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(exited, "exited");
        List<StopReport.StepResult> results = new ArrayList<>();
        if (exited.isDone() || !target.isAlive()) {
            waitFor(exited, Duration.ofSeconds(1));
            return new StopReport(true, StopReport.ALREADY_EXITED, results);
        }
        for (Step step : steps) {
            Instant started = Instant.now();
            String detail = "";
            try {
                if (step.forceSignal() == null) {
                    step.action().run();
                } else if (!signal(target, step.forceSignal())) {
                    detail = "signal not delivered (process gone or not permitted)";
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                detail = "interrupted";
            } catch (Exception e) {
                detail = "action failed: " + e;
                LOG.log(Level.DEBUG, "stop step " + step.name() + " on pid " + target.pid() + " failed", e);
            }
            boolean actionFailed = !detail.isEmpty() && step.forceSignal() == null;
            boolean gone;
            if (actionFailed) {
                gone = exited.isDone(); // nothing was asked of the process: do not wait for it
            } else if (Thread.currentThread().isInterrupted()) {
                // a caller in a hurry: no wait for a polite step, but SIGKILL is certain and quick,
                // and is waited for all the same, so that an interrupted stop does not report (and
                // leave behind) a process that was only a few milliseconds from gone
                gone = Boolean.TRUE.equals(step.forceSignal()) ? waitUninterruptibly(exited, step.waitAfter())
                        : exited.isDone();
            } else {
                gone = waitFor(exited, step.waitAfter());
            }
            Duration took = Duration.between(started, Instant.now());
            results.add(new StopReport.StepResult(step.name(), gone, took, detail));
            if (gone) {
                return new StopReport(true, step.name(), results);
            }
            LOG.log(Level.DEBUG, "pid {0} still running after stop step {1} ({2} ms)", target.pid(), step.name(), took.toMillis());
        }
        LOG.log(Level.WARNING, "pid {0} survived every stop step {1}", target.pid(), stepNames());
        return new StopReport(false, null, results);
    }

    /** {@link #waitFor}, the thread's interrupt set aside meanwhile and set again afterwards. */
    private static boolean waitUninterruptibly(CompletableFuture<?> exited, Duration wait) {
        boolean interrupted = Thread.interrupted();
        try {
            return waitFor(exited, wait);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static boolean waitFor(CompletableFuture<?> exited, Duration wait) {
        try {
            exited.get(wait.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true; // the watcher failed, which only happens once the process is gone
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return exited.isDone();
        }
    }

    /** Builds a ladder; steps run in the order added. */
    public static final class Builder {
        private final List<Step> steps = new ArrayList<>();

        /** A caller-supplied step (QMP system_powerdown, QMP quit, a worker goodbye...). */
        public Builder step(String name, StopAction action, Duration wait) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("step name must not be blank");
            }
            steps.add(new Step(name, Objects.requireNonNull(action, "action"), null, checkWait(name, wait)));
            return this;
        }

        /** SIGTERM (QEMU exits cleanly on it), then wait. */
        public Builder terminate(Duration wait) {
            return signalStep("SIGTERM", false, wait);
        }

        /** SIGKILL, then wait. Cannot be ignored; the last rung. */
        public Builder kill(Duration wait) {
            return signalStep("SIGKILL", true, wait);
        }

        private Builder signalStep(String name, boolean force, Duration wait) {
            steps.add(new Step(name, null, force, checkWait(name, wait)));
            return this;
        }

        public StopLadder build() {
            if (steps.isEmpty()) {
                throw new IllegalStateException("a stop ladder needs at least one step");
            }
            return new StopLadder(steps);
        }

        private static Duration checkWait(String name, Duration wait) {
            if (wait == null || wait.isNegative() || wait.isZero()) {
                throw new IllegalArgumentException("wait of step " + name + " must be positive, got " + wait);
            }
            return wait;
        }
    }

    private static boolean signal(ProcessHandle target, boolean force) {
        return force ? target.destroyForcibly() : target.destroy();
    }
}
