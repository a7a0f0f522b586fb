package io.qvm.transport.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.qvm.protocol.Limits;
import io.qvm.protocol.util.Retry;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import io.qvm.transport.internal.FrameDispatcher;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/** The connect-with-deadline loop shared by the serial and TCP transports. */
final class NettyConnector {

    private static final Duration FIRST_BACKOFF = Duration.ofMillis(5);
    private static final Duration MAX_BACKOFF = Duration.ofMillis(100);

    private NettyConnector() {
    }

    /**
     * Connects to {@code address}, retrying while it is absent or refuses, until {@code deadline};
     * gives up at once when {@code peerAlive} turns false. A frame that stalls for
     * {@code frameStallTimeout} drops the connection ({@link FrameDecoder}).
     */
    static SandboxTransport connect(String kind, NettyIo io, Class<? extends Channel> channelType,
            SocketAddress address, String endpoint, Limits limits, Duration deadline, BooleanSupplier peerAlive,
            Duration frameStallTimeout) throws TransportException, InterruptedException {
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(frameStallTimeout, "frameStallTimeout");
        Objects.requireNonNull(deadline, "deadline");
        Objects.requireNonNull(peerAlive, "peerAlive");
        FrameDispatcher dispatcher = new FrameDispatcher(kind, limits);
        AtomicReference<FrameDecoder> decoder = new AtomicReference<>();
        EventLoopGroup group = io.newGroup("qvm-" + kind);
        boolean ok = false;
        try {
            Bootstrap bootstrap = new Bootstrap().group(group).channel(channelType)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            decoder.set(NettyLink.install(ch.pipeline(), dispatcher, limits, frameStallTimeout));
                        }
                    });
            Channel channel = connectLoop(bootstrap, address, endpoint, deadline, peerAlive);
            dispatcher.attach(new NettyLink(channel, group, decoder.get()));
            ok = true;
            return dispatcher;
        } finally {
            if (!ok) {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            }
        }
    }

    private static Channel connectLoop(Bootstrap bootstrap, SocketAddress address, String endpoint,
            Duration deadline, BooleanSupplier peerAlive) throws TransportException, InterruptedException {
        Retry retry = Retry.until(deadline, FIRST_BACKOFF, MAX_BACKOFF, peerAlive);
        int attempts = 0;
        Throwable last = null;
        while (true) {
            if (!retry.peerAlive()) {
                throw new TransportException(TransportException.Reason.CONNECT_FAILED, "the peer died before " + endpoint + " accepted a connection ("
                        + attempts + " attempts" + lastError(last) + "); look at why QEMU exited", last);
            }
            long left = retry.remainingNanos();
            if (left <= 0) {
                throw new TransportException(TransportException.Reason.CONNECT_FAILED, "no connection to " + endpoint + " within " + deadline + " ("
                        + attempts + " attempts" + lastError(last) + "); check that QEMU was started with this "
                        + "chardev as a listening server", last);
            }
            attempts++;
            bootstrap.option(ChannelOption.CONNECT_TIMEOUT_MILLIS,
                    (int) Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(left), 5_000)));
            ChannelFuture f = bootstrap.connect(address);
            if (!f.await(left, TimeUnit.NANOSECONDS)) {
                f.cancel(false);
                f.channel().close();
                last = new java.net.SocketTimeoutException("connect attempt still pending at the deadline");
                continue;
            }
            if (f.isSuccess()) {
                return f.channel();
            }
            last = f.cause();
            f.channel().close();
            retry.pause("connecting to " + endpoint);
        }
    }

    private static String lastError(Throwable last) {
        return last == null ? "" : "; last error: " + last;
    }
}
