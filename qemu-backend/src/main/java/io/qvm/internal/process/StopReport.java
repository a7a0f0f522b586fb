package io.qvm.internal.process;

import java.time.Duration;
import java.util.List;

/**
 * What a {@link StopLadder} did.
 *
 * @param exited whether the process is gone
 * @param stoppedBy the step after which it was gone, {@link #ALREADY_EXITED} if it was gone
 *     before the first step, or {@code null} if it survived every step
 * @param steps every step that ran, in order
 */
public record StopReport(boolean exited, String stoppedBy, List<StepResult> steps) {

    public static final String ALREADY_EXITED = "already-exited";

    public StopReport {
        steps = List.copyOf(steps);
    }

    /**
     * One rung of the ladder.
     *
     * @param step the step name, e.g. {@code system_powerdown} or {@code SIGTERM}
     * @param exitedAfter whether the process was gone by the end of the step's wait
     * @param took how long the step (action and wait) took
     * @param detail why the action failed, or empty
     */
    public record StepResult(String step, boolean exitedAfter, Duration took, String detail) {}

    /** True if the process had to be killed with SIGKILL (or survived even that). */
    public boolean neededKill() {
        return stoppedBy == null || "SIGKILL".equals(stoppedBy);
    }
}
