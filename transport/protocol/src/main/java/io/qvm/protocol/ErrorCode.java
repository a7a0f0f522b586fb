package io.qvm.protocol;

/** The typed failures a worker reports in an {@link FrameKind#ERROR} frame's {@code code} field. */
public enum ErrorCode {
    /** The request (or the response it would need) is above a byte limit. */
    TOO_LARGE,
    /** The document asks for more than a renderer limit allows (pixels, side, pages). */
    LIMIT_EXCEEDED,
    /** The document could not be parsed. */
    PARSE_ERROR,
    /** The request or document uses something the worker refuses (scripts, external resources…). */
    UNSUPPORTED,
    /** The request ran past its deadline. */
    TIMEOUT,
    /** Anything else; the message says what, without echoing input. */
    INTERNAL,
    /** The request was not understood (unknown kind, bad header). */
    BAD_REQUEST;

    /** The code named in a frame, or {@link #INTERNAL} for a name this side does not know. */
    public static ErrorCode parse(String name) {
        if (name != null) {
            for (ErrorCode c : values()) {
                if (c.name().equals(name)) {
                    return c;
                }
            }
        }
        return INTERNAL;
    }
}
