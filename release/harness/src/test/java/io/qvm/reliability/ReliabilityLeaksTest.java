package io.qvm.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The load's flatness check: what counts as a leak of the host JVM and what does not. */
@Tag("unit")
class ReliabilityLeaksTest {

    private static final long MIB = 1L << 20;

    @Test
    void aFlatHostLeaksNothing() {
        assertEquals(0, Reliability.leaks(10 * MIB, 10 * MIB, 34, 34));
        assertEquals(0, Reliability.leaks(40 * MIB, 10 * MIB, 40, 34));
    }

    @Test
    void descriptorsOpenedOnceForGoodAreNotALeak() {
        assertEquals(0, Reliability.leaks(10 * MIB, 10 * MIB, 34, 34 + Reliability.FD_SLACK));
    }

    @Test
    void everyDescriptorPastTheSlackCounts() {
        assertEquals(5, Reliability.leaks(10 * MIB, 10 * MIB, 34, 34 + Reliability.FD_SLACK + 5));
    }

    @Test
    void aHeapThatGrewPastItsSlackCountsOnce() {
        assertEquals(1, Reliability.leaks(10 * MIB, 10 * MIB + Reliability.HEAP_SLACK + 1, 34, 34));
        assertEquals(0, Reliability.leaks(10 * MIB, 10 * MIB + Reliability.HEAP_SLACK, 34, 34));
    }
}
