package io.qvm.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.qvm.protocol.FrameScript.Accepted;
import io.qvm.protocol.FrameScript.Event;
import io.qvm.protocol.FrameScript.Truncated;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;

/**
 * The blocking {@link FrameReader} (the worker's side of the wire) on streams written by
 * {@link FrameScript}, read in chunks the fuzzer picks: it fails only with its typed
 * {@link FrameException}s, always makes progress, allocates in proportion to what arrived (plus
 * at most one frame within the limits), never delivers a frame above the limits, and on a
 * predictable script reports exactly the frames, rejections and truncation that are there and
 * skips exactly the stale bytes.
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class FrameReaderFuzzTest {

    static final FrameLimits LIMITS = new FrameLimits(256, 1024);

    @FuzzTest(maxDuration = "10s")
    void theReaderFindsEveryFrameAndFailsOnlyInItsTypedWays(FuzzedDataProvider data) throws IOException {
        FrameScript script = FrameScript.from(data, LIMITS);
        Reading reading = read(script);
        if (reading.allocated > reading.bound) {
            reading = read(script); // the first reading may have paid for class loading; the code does not change
        }
        assertTrue(reading.allocated <= reading.bound, "allocated " + reading.allocated + " bytes for "
                + script.bytes().length + " bytes (bound " + reading.bound + "): " + script);
        if (script.predictable()) {
            List<Event> events = script.ending() == FrameScript.Ending.EITHER
                    ? FrameScript.withoutTruncation(reading.events) : reading.events;
            assertEquals(script.expected(), events, script.toString());
            if (script.ending() != FrameScript.Ending.TRUNCATED) {
                assertEquals(script.staleBytes(), reading.discarded, script.toString());
            }
        }
    }

    /** What a reader made of the stream, and what it allocated doing so (this thread, reads only). */
    private record Reading(List<Event> events, long discarded, long allocated, long bound) {
    }

    private static Reading read(FrameScript script) throws IOException {
        int length = script.bytes().length;
        FrameReader reader = new FrameReader(script.inputStream(), LIMITS);
        List<Event> events = new ArrayList<>();
        long allocated = 0;
        int reads = 0;
        while (true) {
            reads++;
            assertTrue(reads <= length / FrameCodec.PREFIX_BYTES + 2, "the reader must make progress: " + script);
            long before = RawFrames.allocatedBytes();
            Event e = FrameScript.next(reader);
            allocated += RawFrames.allocatedBytes() - before;
            if (e == null) {
                break;
            }
            events.add(e);
            if (e instanceof Accepted a) {
                assertTrue(a.body().length() / 2 <= LIMITS.maxBodyBytes(), "a frame above the body limit: " + a);
            }
            if (e instanceof Truncated) {
                break;
            }
        }
        long bound = 64L * length + LIMITS.maxHeaderBytes() + LIMITS.maxBodyBytes() + 16 * 1024L * reads + 64 * 1024;
        return new Reading(events, reader.discardedBytes(), allocated, bound);
    }
}
