package io.qvm.protocol;

import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import java.util.Random;

/**
 * Seeded garbage for the codec tests of other packages: random bytes salted with the things a
 * resynchronising reader must survive — 'Q's, whole and partial magics, prefixes with a broken
 * checksum. (The readers' fuzz tests, {@link FrameReaderFuzzTest} and the host's
 * {@code FrameDecoderFuzzTest}, write their streams with {@link FrameScript} instead.)
 */
public final class FrameFuzzAccess {
    private FrameFuzzAccess() {
    }

    public static byte[] garbage(Random rnd, int length) {
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
        return Arrays.copyOf(out.toByteArray(), length);
    }
}
