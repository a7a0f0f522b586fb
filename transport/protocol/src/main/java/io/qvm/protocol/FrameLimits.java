package io.qvm.protocol;

/**
 * The largest header and body a reader accepts, checked before allocation.
 *
 * @param maxHeaderBytes 0..{@value #HEADER_CEILING}
 * @param maxBodyBytes 0..{@value #BODY_CEILING}
 */
public record FrameLimits(int maxHeaderBytes, int maxBodyBytes) {

    /** 1 MiB: a header describes, it never carries data. */
    public static final int HEADER_CEILING = 1 << 20;
    /** 1 GiB: the hard ceiling whatever the configuration says. */
    public static final int BODY_CEILING = 1 << 30;
    /** Header limit used by both sides: 64 KiB. */
    public static final int DEFAULT_HEADER_BYTES = 64 * 1024;

    public FrameLimits {
        if (maxHeaderBytes < 0 || maxHeaderBytes > HEADER_CEILING) {
            throw new IllegalArgumentException("maxHeaderBytes must be in 0.." + HEADER_CEILING + ", was " + maxHeaderBytes);
        }
        if (maxBodyBytes < 0 || maxBodyBytes > BODY_CEILING) {
            throw new IllegalArgumentException("maxBodyBytes must be in 0.." + BODY_CEILING + ", was " + maxBodyBytes);
        }
    }

    public static FrameLimits ofBody(int maxBodyBytes) {
        return new FrameLimits(DEFAULT_HEADER_BYTES, maxBodyBytes);
    }
}
