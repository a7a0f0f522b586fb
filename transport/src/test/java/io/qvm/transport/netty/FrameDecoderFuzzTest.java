package io.qvm.transport.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCorruptException;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameScript;
import io.qvm.protocol.FrameScript.Accepted;
import io.qvm.protocol.FrameScript.Event;
import io.qvm.protocol.FrameScript.Rejected;
import io.qvm.protocol.FrameScript.Truncated;
import io.qvm.protocol.FrameTruncatedException;
import io.qvm.protocol.RawFrames;
import io.qvm.transport.TransportException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;

/**
 * The host's Netty {@link FrameDecoder} — the one handler that reads what the untrusted guest
 * writes — on streams written by {@link FrameScript}, fed through an {@link EmbeddedChannel} in
 * chunks the fuzzer picks. Only through the channel and the decoder's public API: whatever the
 * bytes, nothing but {@link Frame}s within the limits, {@link RejectedFrame}s and {@link StaleBytes} reports goes downstream,
 * the channel sees no exception (or only the transport's typed ones), memory follows what arrived
 * whatever a frame declares (limits the input reaches, or 64 MiB); a predictable script comes out
 * exactly as written,
 * with exactly its stale bytes skipped; and any script comes out as the blocking
 * {@link FrameReader} reads it, up to how each reports the end of a stream.
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class FrameDecoderFuzzTest {

    /** Limits a fuzzer's input reaches and passes. */
    private static final FrameLimits SMALL = new FrameLimits(256, 1024);
    /** Limits far above any input: a frame may declare megabytes and send ten bytes. */
    private static final FrameLimits LARGE = new FrameLimits(64 * 1024, 64 << 20);

    @FuzzTest(maxDuration = "10s")
    void theDecoderFindsEveryFrameInAnyChunkingAndAgreesWithTheBlockingReader(FuzzedDataProvider data)
            throws IOException {
        FrameLimits limits = data.consumeInt(0, 3) == 0 ? LARGE : SMALL;
        FrameScript script = FrameScript.from(data, limits);
        Decoding decoding = decode(script, limits);
        if (decoding == null) {
            return; // a typed failure of a chaotic stream
        }
        if (decoding.allocated > decoding.bound) {
            decoding = decode(script, limits); // the first decoding may have paid for class loading
        }
        assertTrue(decoding.allocated <= decoding.bound, "allocated " + decoding.allocated + " bytes for "
                + script.bytes().length + " bytes (bound " + decoding.bound + "): " + script);
        if (script.predictable()) {
            List<Event> events = script.ending() == FrameScript.Ending.EITHER
                    ? FrameScript.withoutTruncation(decoding.events) : decoding.events;
            assertEquals(script.expected(), events, script.toString());
            if (script.ending() != FrameScript.Ending.TRUNCATED) {
                assertEquals(script.staleBytes(), decoding.stale, script.toString());
            }
        }
        List<Event> read = FrameScript.readAll(new FrameReader(script.inputStream(), limits));
        assertSameUpToTheEnd(read, decoding.events, script);
    }

    /** What the decoder passed on, the stale bytes it counted, and what it allocated (this thread). */
    private record Decoding(List<Event> events, long stale, long allocated, long bound) {
    }

    /** The script through a fresh decoder on an embedded channel, chunk by chunk; null after a typed failure. */
    private static Decoding decode(FrameScript script, FrameLimits limits) {
        FrameDecoder decoder = new FrameDecoder(limits);
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.config().setAllocator(new UnpooledByteBufAllocator(false)); // heap buffers: the allocation counter sees them
        ch.pipeline().addLast(decoder);
        List<Event> events = new ArrayList<>();
        long allocated = 0;
        List<byte[]> chunks = script.chunks();
        try {
            for (byte[] chunk : chunks) {
                long before = RawFrames.allocatedBytes();
                ch.writeInbound(Unpooled.wrappedBuffer(chunk));
                allocated += RawFrames.allocatedBytes() - before;
                if (!drain(ch, events, script, limits)) {
                    return null;
                }
            }
            long before = RawFrames.allocatedBytes();
            ch.finish();
            allocated += RawFrames.allocatedBytes() - before;
            if (!drain(ch, events, script, limits)) {
                return null;
            }
        } finally {
            ch.finishAndReleaseAll();
        }
        long bound = 64L * script.bytes().length + 16 * 1024L * (chunks.size() + events.size())
                + 256 * 1024; // whatever a frame declares
        return new Decoding(events, decoder.staleBytes(), allocated, bound);
    }

    /**
     * Moves what went downstream into {@code events}; false when the channel failed in a typed way
     * (the decoder may give up on a stream, never throw something else).
     */
    private static boolean drain(EmbeddedChannel ch, List<Event> events, FrameScript script, FrameLimits limits) {
        for (Object m; (m = ch.readInbound()) != null; ) {
            if (m instanceof Frame f) {
                assertTrue(f.body().length <= limits.maxBodyBytes(), "a frame above the body limit: " + f);
                events.add(Accepted.of(f));
            } else if (m instanceof RejectedFrame r) {
                events.add(r.reason() instanceof FrameTruncatedException ? new Truncated()
                        : new Rejected(r.requestId(), r.reason().getClass()));
            } else if (m instanceof StaleBytes) {
                continue; // the counter is compared with the script's stale bytes instead
            } else {
                fail("the decoder passed on " + m.getClass().getName() + ": " + script);
            }
        }
        try {
            ch.checkException();
            return true;
        } catch (Throwable t) {
            Throwable typed = t instanceof TransportException || t instanceof FrameException ? t : t.getCause();
            if (!(typed instanceof TransportException || typed instanceof FrameException) || script.predictable()) {
                throw new AssertionError("the decoder failed with " + t + ": " + script, t);
            }
            return false;
        }
    }

    /**
     * The blocking reader and the decoder read the same stream the same way. They differ only at
     * its end: the reader reports a stream cut off inside a prefix or inside a skipped frame (the
     * decoder has nothing left to say), and it reads a cut-off frame's body before its header's
     * JSON, where the decoder refuses the header first.
     */
    private static void assertSameUpToTheEnd(List<Event> read, List<Event> decoded, FrameScript script) {
        List<Event> r = FrameScript.withoutTruncation(read);
        List<Event> d = FrameScript.withoutTruncation(decoded);
        boolean readerCutOff = r.size() < read.size();
        if (readerCutOff && d.size() == r.size() + 1 && d.get(d.size() - 1) instanceof Rejected last
                && last.reason() == FrameCorruptException.class) {
            d = d.subList(0, d.size() - 1);
        }
        assertEquals(r, d, "the blocking reader and the decoder disagree on " + script);
    }
}
