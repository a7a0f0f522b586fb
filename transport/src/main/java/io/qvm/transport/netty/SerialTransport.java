package io.qvm.transport.netty;

import io.qvm.protocol.Limits;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * virtio-serial: the host end is the AF_UNIX socket of QEMU's
 * {@code -chardev socket,id=qvmw,path=<sock>,server=on,wait=off}, which QEMU connects to the
 * guest's {@code virtserialport}. The port keeps no connection state — bytes from an earlier
 * session may still be in flight — which is what the frame format's resynchronisation and the
 * handshake's nonce are for.
 *
 * <p>Carried by Netty's native epoll (Linux) or kqueue (macOS) domain-socket channel, or by NIO's
 * AF_UNIX support when the native library does not load ({@link NettyIo#best()}).
 */
public final class SerialTransport {

    public static final String KIND = "serial";

    private SerialTransport() {
    }

    /**
     * Connects to the chardev socket, retrying while the file is absent or the connection is
     * refused (QEMU still starting), until {@code deadline}.
     *
     * @param peerAlive polled between attempts; when it turns false (QEMU exited) the connect
     *     fails at once instead of waiting for the deadline
     * @throws TransportException the deadline passed, or the peer died
     */
    public static SandboxTransport connect(Path socket, Limits limits, Duration deadline, BooleanSupplier peerAlive)
            throws TransportException, InterruptedException {
        return connect(socket, limits, deadline, peerAlive, NettyIo.best());
    }

    /** As {@link #connect(Path, Limits, Duration, BooleanSupplier)} with a chosen I/O implementation. */
    public static SandboxTransport connect(Path socket, Limits limits, Duration deadline, BooleanSupplier peerAlive,
            NettyIo io) throws TransportException, InterruptedException {
        return connect(socket, limits, deadline, peerAlive, io, FrameDecoder.DEFAULT_STALL_TIMEOUT);
    }

    /**
     * As {@link #connect(Path, Limits, Duration, BooleanSupplier, NettyIo)}, dropping the
     * connection when a frame from the worker stalls for {@code frameStallTimeout}
     * ({@link io.qvm.transport.TransportException.Reason#FRAME_STALLED}; default
     * {@link FrameDecoder#DEFAULT_STALL_TIMEOUT}).
     */
    public static SandboxTransport connect(Path socket, Limits limits, Duration deadline, BooleanSupplier peerAlive,
            NettyIo io, Duration frameStallTimeout) throws TransportException, InterruptedException {
        Objects.requireNonNull(socket, "socket");
        return NettyConnector.connect(KIND, io, io.domainChannel(), io.domainAddress(socket),
                "the chardev socket " + socket, limits, deadline, peerAlive, frameStallTimeout);
    }
}
