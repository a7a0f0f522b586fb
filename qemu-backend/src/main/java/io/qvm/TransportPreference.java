package io.qvm;

/**
 * How the worker's stdin/stdout reach the host.
 *
 * <p>{@link #SERIAL} is a virtio-serial port backed by a unix socket on the host and works
 * everywhere. {@link #VSOCK} needs {@code vhost-vsock} on a Linux host ({@code /dev/vhost-vsock}).
 * {@link #AUTO} picks VSOCK where it is usable and SERIAL otherwise.
 */
public enum TransportPreference {
    /** VSOCK where usable, else SERIAL. */
    AUTO,
    /** virtio-serial port {@code qvm.worker}; kernel command line {@code qvm.transport=serial}. */
    SERIAL,
    /** virtio-vsock; kernel command line {@code qvm.transport=vsock}. Linux hosts only. */
    VSOCK;

    /**
     * Parses {@code auto|serial|vsock} (any case).
     *
     * @throws InvalidConfigException naming the allowed values
     */
    public static TransportPreference parse(String text) {
        if (text != null) {
            for (TransportPreference t : values()) {
                if (t.name().equalsIgnoreCase(text.strip())) {
                    return t;
                }
            }
        }
        throw new InvalidConfigException("transport", text, "one of auto, serial, vsock");
    }
}
