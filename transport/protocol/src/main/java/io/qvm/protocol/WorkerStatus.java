package io.qvm.protocol;

import java.util.HexFormat;
import java.util.Objects;

/**
 * The worker's answer to {@link FrameKind#STATUS}: facts about the worker process itself, never
 * about a document.
 *
 * @param wallClockMillis the worker's {@code System.currentTimeMillis()} when it answered (inside
 *     gVisor, inside the guest: after a restore from a template this shows whether the guest
 *     clock was set)
 * @param random          {@value #RANDOM_BYTES} bytes the worker read from {@code /dev/urandom}
 *     when it answered, hex; two clones of one template must report different bytes
 * @param requestsServed  requests (ECHO, RENDER, STATUS) this worker process answered before this one
 * @param sessions        HELLOs it accepted (a restored clone has had the template's and its own)
 */
public record WorkerStatus(long wallClockMillis, String random, long requestsServed, long sessions) {

    /** How many random bytes a status carries. */
    public static final int RANDOM_BYTES = 16;

    public WorkerStatus {
        Objects.requireNonNull(random, "random");
        if (random.length() != 2 * RANDOM_BYTES || !random.chars().allMatch(HexFormat::isHexDigit)) {
            throw new IllegalArgumentException("random must be " + RANDOM_BYTES + " bytes as hex, got "
                    + random.length() + " characters");
        }
        if (requestsServed < 0 || sessions < 0) {
            throw new IllegalArgumentException("requestsServed and sessions must be >= 0");
        }
    }

    /** A status with {@code randomBytes} hex-encoded. */
    public static WorkerStatus of(long wallClockMillis, byte[] randomBytes, long requestsServed, long sessions) {
        return new WorkerStatus(wallClockMillis, HexFormat.of().formatHex(randomBytes), requestsServed, sessions);
    }


}
