package io.qvm.internal.qmp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;

/**
 * The QMP reader — what the host makes of the bytes QEMU writes on the QMP socket — without a
 * socket: {@link QmpLineReader} over a channel that returns the stream in chunks the fuzzer picks,
 * then {@link QmpMessage#read} on each line.
 *
 * <ul>
 *   <li>The lines are exactly the stream split at {@code \n} (one {@code \r} before it dropped),
 *   up to the first line longer than the cap, which is a {@link QmpProtocolException}; the end of
 *   the stream is an {@link EOFException}. Nothing else is thrown.</li>
 *   <li>A line reads as one message whose values keep their documented shapes (an event's name
 *   is not empty, its data an object, its timestamp absent or a real instant; a reply's id a
 *   string or absent; an error's class and description present), or as a
 *   {@link QmpProtocolException} whose message has no control characters (it is logged). Nothing
 *   else escapes: the client's reader thread treats anything else as a bug of its own.</li>
 * </ul>
 *
 * Kept inputs: a QMP transcript with the greeting, replies, errors and events, in
 * {@code QmpReaderFuzzTestInputs/} (the last 12 bytes of a kept input are the fuzzer's choices of
 * cap and chunking, so the text ends with padding).
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class QmpReaderFuzzTest {

    @FuzzTest(maxDuration = "10s")
    void everyLineIsOneMessageOrAProtocolError(FuzzedDataProvider data) throws IOException {
        int maxLine = data.consumeInt(64, 1024);
        int maxChunk = data.consumeInt(1, 512);
        long chunkSeed = data.consumeLong();
        byte[] stream = data.consumeRemainingAsBytes();

        List<byte[]> expected = new ArrayList<>();
        boolean expectTooLong = split(stream, maxLine, expected);
        QmpLineReader reader = new QmpLineReader(chunked(stream, maxChunk, chunkSeed), maxLine);
        List<byte[]> lines = new ArrayList<>();
        boolean tooLong = false;
        while (true) {
            byte[] line;
            try {
                line = reader.next();
            } catch (EOFException e) {
                break;
            } catch (QmpProtocolException e) {
                assertPrintable(e.getMessage());
                tooLong = true;
                break;
            }
            assertTrue(line.length <= maxLine, "a line above the cap: " + line.length);
            lines.add(line);
            readMessage(line);
        }
        assertEquals(expectTooLong, tooLong, "a line over the cap of " + maxLine + " and only that is refused");
        assertEquals(expected.size(), lines.size(), "lines");
        for (int i = 0; i < lines.size(); i++) {
            assertArrayEquals(expected.get(i), lines.get(i), "line " + i);
        }
    }

    /** {@link QmpMessage#read} on one line: a message of the documented shape, or a printable protocol error. */
    private static void readMessage(byte[] line) {
        QmpMessage m;
        try {
            m = QmpMessage.read(line);
        } catch (QmpProtocolException e) {
            assertPrintable(e.getMessage());
            return;
        }
        if (m instanceof QmpMessage.Greeting g) {
            assertNotNull(g.greeting().packageName());
            g.greeting().capabilities().forEach(c -> assertNotNull(c));
        } else if (m instanceof QmpMessage.Event e) {
            QmpEvent event = e.event();
            assertTrue(!event.name().isEmpty() && event.data().isObject(), event.toString());
            Instant t = event.timestamp();
            assertTrue(t == null || !t.isBefore(Instant.EPOCH), "a timestamp before 1970: " + t);
            event.shutdown().ifPresent(s -> assertNotNull(s.cause()));
            event.guestPanicked().ifPresent(p -> assertNotNull(p.action()));
            event.vserportChange().ifPresent(v -> assertNotNull(v.id()));
        } else if (m instanceof QmpMessage.Reply r) {
            if (r.error() != null) {
                assertNotNull(r.error().errorClass());
                assertNotNull(r.error().description());
                assertNull(r.result(), "a reply is a result or an error: " + r);
            } else {
                assertNotNull(r.result(), "a result reply has its return value: " + r);
            }
        } else {
            assertNotNull(((QmpMessage.Ignored) m).why());
        }
    }

    /**
     * The reference split: lines ended by {@code \n}, one {@code \r} before it dropped; true if a
     * line (or the unfinished last one) is longer than {@code maxLine}, where the split stops.
     */
    private static boolean split(byte[] stream, int maxLine, List<byte[]> lines) {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (byte b : stream) {
            if (b == '\n') {
                byte[] l = line.toByteArray();
                int end = l.length > 0 && l[l.length - 1] == '\r' ? l.length - 1 : l.length;
                lines.add(Arrays.copyOf(l, end));
                line.reset();
            } else if (line.size() == maxLine) {
                return true;
            } else {
                line.write(b);
            }
        }
        return false;
    }

    private static void assertPrintable(String message) {
        assertTrue(message.codePoints().noneMatch(c -> c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0),
                "a control character in: " + message);
    }

    /** The stream as a channel whose reads return at most one chunk each (1..maxChunk bytes). */
    private static ReadableByteChannel chunked(byte[] stream, int maxChunk, long seed) {
        Random sizes = new Random(seed);
        return new ReadableByteChannel() {
            private int pos;

            @Override
            public int read(ByteBuffer dst) {
                if (pos == stream.length) {
                    return -1;
                }
                int n = Math.min(Math.min(dst.remaining(), stream.length - pos), 1 + sizes.nextInt(maxChunk));
                dst.put(stream, pos, n);
                pos += n;
                return n;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };
    }
}
