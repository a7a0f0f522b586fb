package io.qvm.transport.netty;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.LinuxSocket;
import io.netty.channel.epoll.VSockAddress;
import io.qvm.protocol.Limits;
import io.qvm.protocol.util.Retry;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import io.qvm.transport.internal.FrameDispatcher;
import io.qvm.transport.vsock.VsockSupport;
import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * virtio-vsock: the host connects to the guest's CID and port ({@code vhost-vsock-pci,guest-cid=N}
 * on the QEMU side, {@code qvm.vsock_port} in the guest). Linux only (vhost-vsock is a Linux
 * host feature): the AF_VSOCK socket comes from Netty's epoll native library
 * ({@link LinuxSocket#newVSockStream()}), and once connected it is carried by the same epoll
 * channel, pipeline and dispatcher as {@link SerialTransport}.
 *
 * <p>Check {@link VsockSupport#probe()} first; allocate the CID with
 * {@link io.qvm.transport.vsock.GuestCidAllocator}.
 */
public final class VsockTransport {

    public static final String KIND = "vsock";

    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    private static final Duration FIRST_BACKOFF = Duration.ofNanos(POLL_NANOS);
    private static final Duration MAX_BACKOFF = Duration.ofMillis(100);

    private VsockTransport() {
    }

    /**
     * Connects to {@code cid:port}, retrying while the guest does not listen yet (reset/refused),
     * until {@code deadline}; fails at once when {@code peerAlive} turns false.
     *
     * @throws TransportException AF_VSOCK unusable here, the deadline passed, or the peer died
     */
    public static SandboxTransport connect(int cid, int port, Limits limits, Duration deadline,
            BooleanSupplier peerAlive) throws TransportException, InterruptedException {
        return connect(cid, port, limits, deadline, peerAlive, FrameDecoder.DEFAULT_STALL_TIMEOUT);
    }

    /**
     * {@link #connect(int, int, Limits, Duration, BooleanSupplier)}, dropping the connection when
     * a frame from the worker stalls for {@code frameStallTimeout} ({@link FrameDecoder}).
     */
    public static SandboxTransport connect(int cid, int port, Limits limits, Duration deadline,
            BooleanSupplier peerAlive, Duration frameStallTimeout) throws TransportException, InterruptedException {
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(frameStallTimeout, "frameStallTimeout");
        Objects.requireNonNull(peerAlive, "peerAlive");
        if (cid < 3) {
            throw new IllegalArgumentException("a guest CID is at least 3 (0-2 are reserved), was " + cid);
        }
        VsockSupport.Verdict verdict = VsockSupport.probe();
        if (!verdict.usable()) {
            throw new TransportException(TransportException.Reason.CONNECT_FAILED, "vsock is not usable on this host: " + verdict.reason(), null);
        }
        String endpoint = "vsock cid " + cid + " port " + port;
        Retry retry = Retry.until(deadline, FIRST_BACKOFF, MAX_BACKOFF, peerAlive);
        int attempts = 0;
        IOException last = null;
        while (true) {
            if (!retry.peerAlive()) {
                throw new TransportException(TransportException.Reason.CONNECT_FAILED, "the peer died before " + endpoint + " accepted a connection ("
                        + attempts + " attempts" + (last == null ? "" : "; last error: " + last) + ")", last);
            }
            if (retry.expired()) {
                throw new TransportException(TransportException.Reason.CONNECT_FAILED, "no connection to " + endpoint + " within " + deadline + " ("
                        + attempts + " attempts" + (last == null ? "" : "; last error: " + last)
                        + "); is the guest's worker listening on that port?", last);
            }
            attempts++;
            LinuxSocket fd = LinuxSocket.newVSockStream();
            try {
                boolean connected = fd.connectVSock(new VSockAddress(cid, port));
                while (!connected && !retry.expired()) {
                    LockSupport.parkNanos(POLL_NANOS);
                    connected = fd.finishConnect();
                }
                if (connected) {
                    return adopt(KIND, fd, limits, frameStallTimeout);
                }
                fd.close();
                last = new IOException("connect still in progress at the deadline");
            } catch (IOException e) {
                last = e;
                closeQuietly(fd);
                retry.pause("connecting to " + endpoint);
            }
            if (Thread.interrupted()) {
                throw new InterruptedException("interrupted while connecting to " + endpoint);
            }
        }
    }

    /**
     * Wraps an already connected stream socket (AF_VSOCK here; AF_UNIX in tests, which exercise
     * exactly this path) into an epoll channel with the transport pipeline.
     */
    static SandboxTransport adopt(String kind, LinuxSocket connected, Limits limits, Duration frameStallTimeout)
            throws TransportException {
        FrameDispatcher dispatcher = new FrameDispatcher(kind, limits);
        EventLoopGroup group = NettyIo.EPOLL.newGroup("qvm-" + kind);
        try {
            EpollDomainSocketChannel channel = new EpollDomainSocketChannel(null, connected);
            FrameDecoder decoder = NettyLink.install(channel.pipeline(), dispatcher, limits, frameStallTimeout);
            dispatcher.attach(new NettyLink(channel, group, decoder));
            group.register(channel).syncUninterruptibly();
            return dispatcher;
        } catch (RuntimeException e) {
            closeQuietly(connected);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new TransportException(TransportException.Reason.CONNECT_FAILED, "could not set up the " + kind + " channel: " + e, e);
        }
    }

    private static void closeQuietly(LinuxSocket fd) {
        try {
            fd.close();
        } catch (IOException ignored) {
            // already failed; the connect error is what matters
        }
    }
}
