package io.qvm.protocol;

/**
 * What a frame carries. The numeric code is what travels on the wire (one byte); a reader that
 * meets a code it does not know gets {@link FrameCorruptException} — never a guess.
 *
 * <p>Direction and pairing: each request kind sent by the host is answered by exactly one frame
 * with the same request id, either its reply kind or {@link #ERROR}.
 */
public enum FrameKind {
    /** host → worker: opens a session; header {@code {"nonce", "protocol", "limits"}}. */
    HELLO(0x01),
    /** worker → host: answers HELLO; header {@code {"nonce", "version", "capabilities"}}. */
    READY(0x02),
    /**
     * host → worker: the body is echoed back unchanged (transport and limit checks); with header
     * {@code {"replyBytes": n}} the body is dropped and n zero bytes come back instead (so each
     * direction can be timed on its own; n is checked against the response limit first).
     */
    ECHO(0x10),
    /** worker → host: the echoed body. */
    ECHO_REPLY(0x11),
    /** host → worker: a render request; header describes it, body is the document. */
    RENDER(0x20),
    /** worker → host: a rendered image; header describes it, body is the PNG. */
    RENDER_RESULT(0x21),
    /**
     * host → worker: report the worker's own state (no body): its wall clock, a few fresh bytes of
     * its {@code /dev/urandom}, how many requests it has served. Nothing of any document. The host
     * uses it to check a clone restored from a template (clock set, randomness its own).
     */
    STATUS(0x30),
    /** worker → host: answers STATUS; header {@code {"wallClockMillis","random","requestsServed","sessions"}}. */
    STATUS_REPLY(0x31),
    /** worker → host: a typed failure of the request with the same id; header {@code {"code","message"}}. */
    ERROR(0x7E),
    /** host → worker: finish and exit 0 (the guest then powers off); the worker answers GOODBYE. */
    GOODBYE(0x7F);

    private final int code;

    FrameKind(int code) {
        this.code = code;
    }

    /** The byte written on the wire. */
    public int code() {
        return code;
    }

    /**
     * The kind that answers a request of this kind ({@link #ERROR} may always answer instead), or
     * {@code null} when this kind is not a request the host sends with
     * {@code SandboxTransport.request} (HELLO has its own handshake; the others flow from the
     * worker).
     */
    public FrameKind replyKind() {
        switch (this) {
            case ECHO:
                return ECHO_REPLY;
            case RENDER:
                return RENDER_RESULT;
            case STATUS:
                return STATUS_REPLY;
            case GOODBYE:
                return GOODBYE;
            default:
                return null;
        }
    }

    /** The kind for a wire code, or {@code null} if the code is unknown. */
    public static FrameKind fromCode(int code) {
        for (FrameKind k : values()) {
            if (k.code == code) {
                return k;
            }
        }
        return null;
    }
}
