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
 * {@link FrameScript}, read in chunks the fuzzer picks, under limits the input reaches or limits of
 * 64 MiB: it fails only with its typed {@link FrameException}s, always makes progress, allocates
 * in proportion to what arrived whatever a frame declares, never delivers a frame above the
 * limits, and on a predictable script reports exactly the frames, rejections and truncation that
 * are there and skips exactly the stale bytes.
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class FrameReaderFuzzTest {

    /** Limits a fuzzer's input reaches and passes. */
    static final FrameLimits SMALL = new FrameLimits(256, 1024);
    /** Limits far above any input: a frame may declare megabytes and send ten bytes. */
    static final FrameLimits LARGE = new FrameLimits(64 * 1024, 64 << 20);

    @FuzzTest(maxDuration = "10s")
    void theReaderFindsEveryFrameAndFailsOnlyInItsTypedWays(FuzzedDataProvider data) throws IOException {
        FrameLimits limits = data.consumeInt(0, 3) == 0 ? LARGE : SMALL;
        FrameScript script = FrameScript.from(data, limits);
        Reading reading = read(script, limits);
        if (reading.allocated > reading.bound) {
            reading = read(script, limits); // the first reading may have paid for class loading
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

    private static Reading read(FrameScript script, FrameLimits limits) throws IOException {
        int length = script.bytes().length;
        FrameReader reader = new FrameReader(script.inputStream(), limits);
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
                assertTrue(a.body().length() / 2 <= limits.maxBodyBytes(), "a frame above the body limit: " + a);
            }
            if (e instanceof Truncated) {
                break;
            }
        }
        long bound = 64L * length + 16 * 1024L * reads + 256 * 1024; // whatever a frame declares
        return new Reading(events, reader.discardedBytes(), allocated, bound);
    }
}
