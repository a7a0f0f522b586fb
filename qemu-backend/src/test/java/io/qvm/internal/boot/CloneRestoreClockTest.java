package io.qvm.internal.boot;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.SandboxException;
import io.qvm.internal.sandbox.GuestControl;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * How a clone's clock is judged from the init's answer: the guest kernel's clock lies between
 * when the host sent the time and when it read the answer, give or take the whole seconds —
 * however long that span was on a loaded host — and a clock left at the template's time does not.
 */
@Tag("unit")
class CloneRestoreClockTest {

    private static final long SENT = 1_796_320_968_400L;

    private static GuestControl.Restored said(long epochSeconds) {
        return new GuestControl.Restored(epochSeconds, 1, true);
    }

    @Test
    void aClockSetAnywhereBetweenSendingAndTheAnswerIsTaken() {
        long answered = SENT + 5_500; // 16 clones restored at once on 2 cores: the init answered 5.5 s later
        assertDoesNotThrow(() -> CloneRestore.checkClock(said(SENT / 1000), SENT, answered), "set at once");
        assertDoesNotThrow(() -> CloneRestore.checkClock(said((SENT + 5_000) / 1000), SENT, answered), "set late");
        assertDoesNotThrow(() -> CloneRestore.checkClock(said((SENT + 500) / 1000 - 1), SENT, SENT + 20),
                "whole seconds, rounded by the host and truncated by date +%s");
    }

    @Test
    void aClockOutsideThatSpanIsRefused() {
        long answered = SENT + 5_500;
        SandboxException before = assertThrows(SandboxException.class,
                () -> CloneRestore.checkClock(said(SENT / 1000 - 30), SENT, answered));
        assertTrue(before.getMessage().contains("could not set the restored clone's clock"), before.getMessage());
        assertThrows(SandboxException.class, () -> CloneRestore.checkClock(said(SENT / 1000 - 3_600 * 24), SENT,
                answered), "the template's day-old clock");
        assertThrows(SandboxException.class, () -> CloneRestore.checkClock(said((answered + 2_000) / 1000 + 1), SENT,
                answered), "a clock ahead of the answer");
    }
}
