package io.qvm.protocol;

import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameTruncatedException;
import static io.qvm.protocol.RawFrames.encode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Seeded property tests: whatever the bytes, the reader ends (never hangs), throws nothing but
 * {@link FrameException}, allocates within its limits; and real frames between arbitrary garbage
 * all come out, in order. A failing seed is printed in the assertion message: rerun with it.
 */
@Tag("unit")
@Tag("security")
class FrameFuzzTest {

    static final FrameLimits SMALL = new FrameLimits(1024, 64 * 1024);

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void randomBytesNeverHangOrOverAllocate() throws Exception {
        for (long seed = 1; seed <= 300; seed++) {
            Random rnd = new Random(seed);
            byte[] bytes = randomGarbage(rnd, rnd.nextInt(200_000));
            long before = RawFrames.allocatedBytes();
            FrameReader r = new FrameReader(new ByteArrayInputStream(bytes), SMALL);
            int reads = 0;
            while (true) {
                reads++;
                try {
                    if (r.read() == null) {
                        break;
                    }
                } catch (FrameTruncatedException e) {
                    break;
                } catch (FrameException e) {
                    // rejected frame: go on
                }
                assertTrue(reads <= bytes.length + 1, "seed " + seed + ": the reader must make progress");
            }
            long allocated = RawFrames.allocatedBytes() - before;
            assertTrue(allocated < 32L * (SMALL.maxBodyBytes() + SMALL.maxHeaderBytes()) + 8L * bytes.length,
                    "seed " + seed + ": allocated " + allocated);
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void everyRealFrameSurvivesGarbageAroundIt() throws Exception {
        for (long seed = 1; seed <= 200; seed++) {
            Random rnd = new Random(seed);
            List<Frame> sent = new ArrayList<>();
            ByteArrayOutputStream stream = new ByteArrayOutputStream();
            int n = 1 + rnd.nextInt(8);
            for (int i = 0; i < n; i++) {
                stream.writeBytes(randomGarbage(rnd, rnd.nextInt(3000)));
                byte[] body = new byte[rnd.nextInt(5000)];
                rnd.nextBytes(body);
                Frame f = Frame.of(FrameKind.ECHO_REPLY, rnd.nextLong(), body);
                sent.add(f);
                stream.writeBytes(encode(f));
            }
            FrameReader r = new FrameReader(new ByteArrayInputStream(stream.toByteArray()), SMALL);
            for (Frame expected : sent) {
                Frame got = r.read();
                assertEquals(expected.requestId(), got.requestId(), "seed " + seed);
                assertArrayEquals(expected.body(), got.body(), "seed " + seed);
            }
        }
    }

    /**
     * Random bytes salted with the things a resynchronising reader must survive: 'Q's, whole and
     * partial magics, prefixes with a broken checksum.
     */
    static byte[] randomGarbage(Random rnd, int length) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (out.size() < length) {
            switch (rnd.nextInt(6)) {
                case 0 -> out.write('Q');
                case 1 -> out.writeBytes("QVMF".getBytes());
                case 2 -> out.writeBytes("QVM".getBytes());
                case 3 -> {
                    byte[] p = RawFrames.prefix(1, 0x11, 0, rnd.nextLong(), rnd.nextInt(2000), rnd.nextInt(5000));
                    p[24 + rnd.nextInt(4)] ^= (byte) (1 + rnd.nextInt(255));
                    out.writeBytes(p);
                }
                default -> {
                    byte[] b = new byte[rnd.nextInt(64)];
                    rnd.nextBytes(b);
                    out.writeBytes(b);
                }
            }
        }
        return java.util.Arrays.copyOf(out.toByteArray(), length);
    }
}
