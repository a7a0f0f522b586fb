package io.qvm.protocol;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

/**
 * A byte stream for the frame readers ({@link FrameReader}, the host's Netty {@code FrameDecoder}),
 * written from fuzzer input as segments, with what a correct reader makes of it:
 *
 * <pre>
 *  | noise | frame | broken prefix | frame | noise | ... | [cut-off frame]
 *
 *  noise          bytes, without 'Q' unless the script is chaotic
 *  frame          a prefix with a sound CRC-32C and any version, kind, flags, id; a header
 *                 (often a JSON object, sometimes not JSON); a body; the lengths exactly those
 *                 of the bytes that follow — accepted, or rejected by the codec's own rules
 *  broken prefix  "QVMF" and 24 bytes whose checksum does not match (no other 'Q' inside)
 *  cut-off frame  last: a sound prefix whose header or body the stream does not finish (with
 *                 large limits, one that declares megabytes and sends a few bytes)
 * </pre>
 *
 * <p>Frames are written up to a little above the limits, or up to 2 KiB when the limits are
 * larger than a fuzzer's input; only a cut-off frame declares more than it sends.
 *
 * <p>A script is <em>predictable</em> unless it is chaotic: then every byte that is not in a
 * frame can only be skipped, so the readers' output is exactly {@link #expected()}. A chaotic
 * script's noise is any bytes (the fuzzer can plant prefixes in it); the readers must still fail
 * only in their typed ways and keep to their limits. The classification of each frame uses the
 * codec's pure checks ({@link FrameCodec#validate}, {@link FrameCodec#decodeHeader}): what is
 * tested is the readers' framing — resynchronisation, skipping, chunking, the end of the
 * stream — not JSON.
 *
 * <p>The stream is delivered in chunks whose sizes the fuzzer picks too ({@link #chunks()},
 * {@link #inputStream()}). Fuzz tests only.
 */
public final class FrameScript {

    /** What a reader makes of the stream, in order. */
    public sealed interface Event permits Accepted, Rejected, Truncated {
    }

    /** A frame delivered; header as compact JSON, body as hex, so that events compare by value. */
    public record Accepted(FrameKind kind, long requestId, String header, String body) implements Event {
        public static Accepted of(Frame f) {
            return new Accepted(f.kind(), f.requestId(), f.header().toString(), HexFormat.of().formatHex(f.body()));
        }
    }

    /** A frame whose checksummed prefix was read but which was refused, and the exception's type. */
    public record Rejected(long requestId, Class<? extends FrameException> reason) implements Event {
        public static Rejected of(long requestId, FrameException e) {
            return new Rejected(requestId, e.getClass());
        }
    }

    /** The stream ended inside a frame. */
    public record Truncated() implements Event {
    }

    /** Whether the stream ends inside a frame. */
    public enum Ending {
        /** It ends between frames (or in stale bytes). */
        CLEAN,
        /** It ends inside an accepted frame: a reader says so. */
        TRUNCATED,
        /**
         * It ends inside the bytes of a rejected frame: the blocking reader says the stream was cut
         * off, the Netty decoder has already moved on; either is right.
         */
        EITHER
    }

    private final byte[] bytes;
    private final boolean chaotic;
    private final List<Event> expected;
    private final Ending ending;
    private final long staleBytes;
    private final int maxChunk;
    private final long chunkSeed;

    private FrameScript(byte[] bytes, boolean chaotic, List<Event> expected, Ending ending, long staleBytes,
            int maxChunk, long chunkSeed) {
        this.bytes = bytes;
        this.chaotic = chaotic;
        this.expected = List.copyOf(expected);
        this.ending = ending;
        this.staleBytes = staleBytes;
        this.maxChunk = maxChunk;
        this.chunkSeed = chunkSeed;
    }

    /** A script for readers with {@code limits}. */
    public static FrameScript from(FuzzedDataProvider data, FrameLimits limits) {
        boolean chaotic = data.consumeInt(0, 3) == 0;
        int maxChunk = data.consumeInt(1, 600);
        long chunkSeed = data.consumeLong();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<Event> expected = new ArrayList<>();
        Ending ending = Ending.CLEAN;
        long stale = 0;
        for (int segment = 0; segment < 24 && data.remainingBytes() > 0 && ending == Ending.CLEAN; segment++) {
            switch (data.consumeInt(0, 5)) {
                case 0 -> {
                    byte[] noise = data.consumeBytes(data.consumeInt(0, 300));
                    if (!chaotic) {
                        replaceQ(noise, 0);
                    }
                    out.writeBytes(noise);
                    stale += noise.length;
                }
                case 1 -> {
                    out.writeBytes(brokenPrefix(data, chaotic));
                    stale += FrameCodec.PREFIX_BYTES;
                }
                case 2 -> ending = cutOff(data, limits, out, expected);
                default -> frame(data, limits, out, expected);
            }
        }
        return new FrameScript(out.toByteArray(), chaotic, expected, ending, stale, maxChunk, chunkSeed);
    }

    private static void frame(FuzzedDataProvider data, FrameLimits limits, ByteArrayOutputStream out,
            List<Event> expected) {
        int version = data.consumeInt(0, 15) == 0 ? data.consumeInt(0, 255) : FrameCodec.VERSION;
        int kindCode = data.consumeInt(0, 7) == 0 ? data.consumeInt(0, 255) : data.pickValue(FrameKind.values()).code();
        int flags = data.consumeInt(0, 15) == 0 ? data.consumeInt(0, 0xFFFF) : 0;
        long id = data.consumeLong();
        byte[] header = JsonHeaders.header(data, FrameKind.fromCode(kindCode),
                Math.min(limits.maxHeaderBytes(), 1024) + 8);
        byte[] body = data.consumeBytes(data.consumeInt(0, Math.min(limits.maxBodyBytes(), 2048) + 8));
        FrameCodec.Prefix p = new FrameCodec.Prefix(version, kindCode, flags, id, header.length, body.length);
        out.writeBytes(RawFrames.prefix(version, kindCode, flags, id, header.length, body.length));
        out.writeBytes(header);
        out.writeBytes(body);
        try {
            FrameKind kind = FrameCodec.validate(p, limits);
            expected.add(new Accepted(kind, id, FrameCodec.decodeHeader(id, header).toString(),
                    HexFormat.of().formatHex(body)));
        } catch (FrameException e) {
            expected.add(Rejected.of(id, e));
        }
    }

    /** Last: a sound prefix that the stream does not finish. */
    private static Ending cutOff(FuzzedDataProvider data, FrameLimits limits, ByteArrayOutputStream out,
            List<Event> expected) {
        long id = data.consumeLong();
        if (data.consumeBoolean()) {
            // Declared above the limits, up to the format's 4 GiB: rejected at once, then cut off.
            boolean headerTooLarge = data.consumeBoolean();
            long headerLength = headerTooLarge ? data.consumeLong(limits.maxHeaderBytes() + 1L, 0xFFFF_FFFFL) : 0;
            long bodyLength = data.consumeLong(headerTooLarge ? 0 : limits.maxBodyBytes() + 1L, 0xFFFF_FFFFL);
            FrameKind kind = data.pickValue(FrameKind.values());
            out.writeBytes(RawFrames.prefix(FrameCodec.VERSION, kind.code(), 0, id, headerLength, bodyLength));
            out.writeBytes(data.consumeBytes(data.consumeInt(0, (int) Math.min(300, headerLength + bodyLength - 1))));
            expected.add(new Rejected(id, FrameTooLargeException.class));
            return Ending.EITHER;
        }
        // Within the limits, a JSON-object header (so that no reader can refuse the frame first).
        FrameKind kind = data.pickValue(FrameKind.values());
        byte[] header = JsonHeaders.message(data, kind).getBytes(StandardCharsets.UTF_8);
        if (header.length > limits.maxHeaderBytes() || !isJsonObject(header)) {
            header = "{}".getBytes(StandardCharsets.UTF_8);
        }
        int bodyLength = data.consumeInt(0, limits.maxBodyBytes());
        long declared = (long) header.length + bodyLength;
        if (declared == 0) {
            return Ending.CLEAN;
        }
        out.writeBytes(RawFrames.prefix(FrameCodec.VERSION, kind.code(), 0, id, header.length, bodyLength));
        int sent = (int) data.consumeLong(0, declared - 1);
        byte[] rest = RawFrames.concat(header, data.consumeBytes(bodyLength));
        out.write(rest, 0, Math.min(sent, rest.length));
        expected.add(new Truncated());
        return Ending.TRUNCATED;
    }

    private static boolean isJsonObject(byte[] header) {
        try {
            FrameCodec.decodeHeader(0, header);
            return true;
        } catch (FrameCorruptException e) {
            return false; // e.g. a key twice
        }
    }

    /** "QVMF" and 24 bytes whose CRC-32C does not match; in a predictable script, no 'Q' after the first byte. */
    private static byte[] brokenPrefix(FuzzedDataProvider data, boolean chaotic) {
        byte[] p = RawFrames.prefix(data.consumeInt(0, 255), data.consumeInt(0, 255), data.consumeInt(0, 0xFFFF),
                data.consumeLong(), data.consumeInt(0, 5000), data.consumeInt(0, 70_000));
        p[24 + data.consumeInt(0, 3)] ^= (byte) data.consumeInt(1, 255);
        if (!chaotic) {
            replaceQ(p, 1);
        }
        while (FrameCodec.decodePrefix(ByteBuffer.wrap(p), 0) != null) {
            p[27] = (byte) (p[27] == 'P' ? 'R' : p[27] + 1); // replacing a 'Q' matched the checksum after all
        }
        return p;
    }

    private static void replaceQ(byte[] b, int from) {
        for (int i = from; i < b.length; i++) {
            if (b[i] == 'Q') {
                b[i] = 'q';
            }
        }
    }

    /** The whole stream. */
    public byte[] bytes() {
        return bytes.clone();
    }

    /** Whether a correct reader's output is exactly {@link #expected()} (see the class comment). */
    public boolean predictable() {
        return !chaotic;
    }

    /** What a correct reader reports, in order, for a predictable script (a truncation last, if any). */
    public List<Event> expected() {
        return expected;
    }

    /** How the stream ends. */
    public Ending ending() {
        return ending;
    }

    /** The bytes a correct reader skips as stale in a predictable script: the noise and broken prefixes. */
    public long staleBytes() {
        return staleBytes;
    }

    /** The stream cut into the chunks the fuzzer chose (1 to 600 bytes each). */
    public List<byte[]> chunks() {
        Random sizes = new Random(chunkSeed);
        List<byte[]> chunks = new ArrayList<>();
        for (int pos = 0; pos < bytes.length; ) {
            int n = Math.min(bytes.length - pos, 1 + sizes.nextInt(maxChunk));
            chunks.add(Arrays.copyOfRange(bytes, pos, pos + n));
            pos += n;
        }
        return chunks;
    }

    /** The stream as a blocking stream whose reads return at most one chunk each. */
    public InputStream inputStream() {
        List<byte[]> chunks = chunks();
        return new InputStream() {
            private int chunk;
            private int offset;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (len == 0) {
                    return 0;
                }
                if (chunk == chunks.size()) {
                    return -1;
                }
                byte[] c = chunks.get(chunk);
                int n = Math.min(len, c.length - offset);
                System.arraycopy(c, offset, b, off, n);
                offset += n;
                if (offset == c.length) {
                    chunk++;
                    offset = 0;
                }
                return n;
            }
        };
    }

    /** Everything {@code reader} reports until the stream ends (a truncation ends it too). */
    public static List<Event> readAll(FrameReader reader) throws IOException {
        List<Event> events = new ArrayList<>();
        for (Event e; (e = next(reader)) != null; ) {
            events.add(e);
            if (e instanceof Truncated) {
                break;
            }
        }
        return events;
    }

    /** What the next {@link FrameReader#read()} reports, or null when the stream ended between frames. */
    public static Event next(FrameReader reader) throws IOException {
        try {
            Frame f = reader.read();
            return f == null ? null : Accepted.of(f);
        } catch (FrameTooLargeException e) {
            return new Rejected(e.requestId(), e.getClass());
        } catch (FrameCorruptException e) {
            return new Rejected(e.requestId(), e.getClass());
        } catch (FrameTruncatedException e) {
            return new Truncated();
        }
    }

    /** {@code events} without a truncation at their end. */
    public static List<Event> withoutTruncation(List<Event> events) {
        return !events.isEmpty() && events.get(events.size() - 1) instanceof Truncated
                ? events.subList(0, events.size() - 1) : events;
    }

    @Override
    public String toString() {
        return (chaotic ? "chaotic" : "predictable") + " script of " + bytes.length + " bytes, ending " + ending
                + ", expecting " + expected;
    }
}
