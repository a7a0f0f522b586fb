package io.qvm.protocol;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Objects;

/**
 * The host's opening message. The worker must answer with a {@link Ready} that carries the same
 * nonce; the host discards every frame before that READY, so nothing left on the port from an
 * earlier session can be taken for an answer.
 */
public record Hello(String nonce, int protocol, Limits limits) {

    /** Request id of the HELLO / READY pair. */
    public static final long REQUEST_ID = 0;

    public Hello {
        Objects.requireNonNull(nonce, "nonce");
        Objects.requireNonNull(limits, "limits");
    }

    /** A HELLO with a fresh 128-bit nonce from {@link SecureRandom}. */
    public static Hello fresh(Limits limits) {
        byte[] n = new byte[16];
        new SecureRandom().nextBytes(n);
        return new Hello(HexFormat.of().formatHex(n), FrameCodec.VERSION, limits);
    }


}
