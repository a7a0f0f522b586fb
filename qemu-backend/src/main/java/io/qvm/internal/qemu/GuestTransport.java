package io.qvm.internal.qemu;

import io.qvm.protocol.image.KernelCommandLine;
import java.nio.file.Path;
import java.util.Objects;

/** How the worker's stdio leaves the guest, resolved from a {@code TransportPreference}. */
public sealed interface GuestTransport permits GuestTransport.Serial, GuestTransport.Vsock {

    /** The virtio-serial port name the guest init looks for (CONTRACTS.md). */
    String PORT_NAME = KernelCommandLine.WORKER_PORT;
    /** The chardev id of the worker port (CONTRACTS.md). */
    String CHARDEV_ID = "qvmw";
    /** The virtio-serial port of the guest init's control channel (CONTRACTS.md). */
    String CONTROL_PORT_NAME = KernelCommandLine.CONTROL_PORT;
    /** The chardev id of the control port. */
    String CONTROL_CHARDEV_ID = "qvmc";
    /** The virtio-serial port of the guest init's events, which only the init writes (CONTRACTS.md). */
    String EVENTS_PORT_NAME = KernelCommandLine.EVENTS_PORT;
    /** The chardev id of the events port. */
    String EVENTS_CHARDEV_ID = "qvme";
    /** The port the init writes a class archive to, when asked to make one (adr/0018). */
    String ARCHIVE_PORT_NAME = KernelCommandLine.ARCHIVE_PORT;
    /** Its chardev: a file in the sandbox's state directory, or {@code null} when no archive is made. */
    String ARCHIVE_CHARDEV_ID = "qvma";
    /** Default guest vsock port (CONTRACTS.md). */
    int DEFAULT_VSOCK_PORT = KernelCommandLine.DEFAULT_VSOCK_PORT;

    /**
     * virtio-serial port {@value #PORT_NAME}, backed by a unix socket QEMU listens on.
     *
     * @param socket the host-side socket path (the host connects after QEMU starts)
     */
    record Serial(Path socket) implements GuestTransport {
        public Serial {
            Objects.requireNonNull(socket, "socket");
        }
    }

    /**
     * virtio-vsock through the host kernel's vhost-vsock.
     *
     * @param guestCid the guest's context id, 3..4294967294 (0–2 and 2^32−1 are reserved)
     * @param port     the guest port the worker listens on, 1..2^31−1
     */
    record Vsock(long guestCid, int port) implements GuestTransport {
        public Vsock {
            if (guestCid < 3 || guestCid > 0xFFFF_FFFEL) {
                throw new IllegalArgumentException("guestCid = " + guestCid + " is invalid: allowed 3..4294967294 "
                        + "(0, 1, 2 and 2^32-1 are reserved)");
            }
            if (port < 1) {
                throw new IllegalArgumentException("vsock port = " + port + " is invalid: allowed 1..2147483647");
            }
        }
    }
}
