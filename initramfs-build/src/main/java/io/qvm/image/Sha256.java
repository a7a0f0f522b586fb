package io.qvm.image;

import java.io.IOException;
import java.nio.file.Path;

/**
 * {@link io.qvm.protocol.util.Sha256} for the image build, whose failures are
 * {@link ImageException}s.
 */
public final class Sha256 {
    private Sha256() {
    }

    public static String of(Path file) {
        try {
            return io.qvm.protocol.util.Sha256.of(file);
        } catch (IOException e) {
            throw new ImageException("cannot read " + file + " to hash it: " + e, e);
        }
    }

    public static String of(byte[] bytes) {
        return io.qvm.protocol.util.Sha256.of(bytes);
    }
}
