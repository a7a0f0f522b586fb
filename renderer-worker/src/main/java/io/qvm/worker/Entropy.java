package io.qvm.worker;

import java.io.EOFException;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The worker's {@code /dev/urandom}, opened afresh for every use: fresh bytes for a STATUS reply,
 * and a drain after every accepted HELLO.
 *
 * <p>Why the drain: a clone restored from a VM snapshot template starts with the template's whole
 * memory, including gVisor's. The sentry serves the sandbox's {@code /dev/urandom} and
 * {@code getrandom} from a {@code bufio.Reader} (4096 bytes by default, gVisor {@code pkg/rand})
 * filled from the guest kernel, so the bytes buffered when the template was saved would be the
 * first up-to-4 KiB every clone reads. The host says HELLO again after each restore; reading and
 * discarding {@value #DRAIN_BYTES} bytes then empties that buffer, and every later read comes
 * from the guest kernel's CRNG, which vmgenid reseeded on the restore. For the same reason the
 * bytes come from a plain {@link FileInputStream}, never from a {@code SecureRandom}: one seeded
 * before the snapshot would hold the same state in every clone.
 */
class Entropy {

    /** Twice gVisor's default buffer, so nothing buffered before a snapshot survives the drain. */
    static final int DRAIN_BYTES = 8192;

    private final Path device;

    Entropy(Path device) {
        this.device = Objects.requireNonNull(device, "device");
    }

    /** The guest's (gVisor's) {@code /dev/urandom}. */
    static Entropy urandom() {
        return new Entropy(Path.of("/dev/urandom"));
    }

    /** {@code n} bytes read from the device now. */
    byte[] fresh(int n) throws IOException {
        try (InputStream in = open()) {
            byte[] b = in.readNBytes(n);
            if (b.length != n) {
                throw new EOFException(device + " ended after " + b.length + " bytes");
            }
            return b;
        }
    }

    /**
     * Reads and discards {@value #DRAIN_BYTES} bytes. Does nothing if the device does not exist
     * (a test host without one); any failure is logged as one line and otherwise ignored, since
     * a worker that cannot drain still renders correctly.
     */
    void drain(Log log) {
        if (!Files.exists(device)) {
            return;
        }
        byte[] buf = new byte[1024];
        int total = 0;
        try (InputStream in = open()) {
            while (total < DRAIN_BYTES) {
                int n = in.read(buf, 0, Math.min(buf.length, DRAIN_BYTES - total));
                if (n < 0) {
                    throw new EOFException();
                }
                total += n;
            }
        } catch (IOException e) {
            log.info("cannot drain " + device + " (" + e.getClass().getSimpleName() + " after " + total
                    + " bytes); continuing");
        }
    }

    /** Opens the device; tests override it to count what is read. */
    InputStream open() throws IOException {
        return new FileInputStream(device.toFile());
    }
}
