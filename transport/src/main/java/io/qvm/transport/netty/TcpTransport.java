package io.qvm.transport.netty;

import io.qvm.protocol.Limits;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * virtio-serial again, for hosts without AF_UNIX: QEMU listens on loopback TCP
 * ({@code -chardev socket,id=qvmw,host=127.0.0.1,port=N,server=on,wait=off}). Same pipeline and
 * semantics as {@link SerialTransport}. Bind only to loopback: anyone who can connect to that port
 * talks to the worker.
 */
public final class TcpTransport {

    public static final String KIND = "tcp";

    private TcpTransport() {
    }

    /** Connects with retries until {@code deadline}; fails at once when {@code peerAlive} turns false. */
    public static SandboxTransport connect(InetSocketAddress address, Limits limits, Duration deadline,
            BooleanSupplier peerAlive) throws TransportException, InterruptedException {
        return connect(address, limits, deadline, peerAlive, NettyIo.best());
    }

    /** As {@link #connect(InetSocketAddress, Limits, Duration, BooleanSupplier)} with a chosen I/O implementation. */
    public static SandboxTransport connect(InetSocketAddress address, Limits limits, Duration deadline,
            BooleanSupplier peerAlive, NettyIo io) throws TransportException, InterruptedException {
        return connect(address, limits, deadline, peerAlive, io, FrameDecoder.DEFAULT_STALL_TIMEOUT);
    }

    /**
     * As {@link #connect(InetSocketAddress, Limits, Duration, BooleanSupplier, NettyIo)}, dropping
     * the connection when a frame from the worker stalls for {@code frameStallTimeout}
     * ({@link io.qvm.transport.TransportException.Reason#FRAME_STALLED}).
     */
    public static SandboxTransport connect(InetSocketAddress address, Limits limits, Duration deadline,
            BooleanSupplier peerAlive, NettyIo io, Duration frameStallTimeout)
            throws TransportException, InterruptedException {
        Objects.requireNonNull(address, "address");
        return NettyConnector.connect(KIND, io, io.socketChannel(), address, "tcp " + address, limits, deadline,
                peerAlive, frameStallTimeout);
    }
}
