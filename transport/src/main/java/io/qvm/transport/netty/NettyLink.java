package io.qvm.transport.netty;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.DecoderException;
import io.netty.util.ReferenceCountUtil;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameTruncatedException;
import io.qvm.protocol.Limits;
import io.qvm.transport.internal.FrameDispatcher;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link FrameDispatcher.Link} over one Netty channel with its own one-thread event loop group.
 *
 * <pre>
 *  pipeline:  [FrameDecoder] → [FrameEncoder] → [DispatchHandler → FrameDispatcher]
 *  inbound:   bytes → Frame | RejectedFrame | StaleBytes → dispatcher.onFrame / onRejected / onStale
 *  close:     channelInactive → dispatcher.onLinkClosed(cause)
 * </pre>
 */
final class NettyLink implements FrameDispatcher.Link {

    private final Channel channel;
    private final EventLoopGroup group;
    private final FrameDecoder decoder;
    private final AtomicBoolean closed = new AtomicBoolean();

    NettyLink(Channel channel, EventLoopGroup group, FrameDecoder decoder) {
        this.channel = channel;
        this.group = group;
        this.decoder = decoder;
    }

    /** Puts the codec and the dispatcher on a fresh channel's pipeline; returns the decoder. */
    static FrameDecoder install(ChannelPipeline pipeline, FrameDispatcher dispatcher, Limits limits,
            Duration frameStallTimeout) {
        FrameDecoder decoder = new FrameDecoder(FrameDispatcher.inboundLimits(limits), frameStallTimeout);
        pipeline.addLast("frame-decoder", decoder);
        pipeline.addLast("frame-encoder", new FrameEncoder(FrameDispatcher.outboundLimits(limits)));
        pipeline.addLast("dispatch", new DispatchHandler(dispatcher));
        return decoder;
    }

    @Override
    public CompletableFuture<Void> send(Frame frame) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        channel.writeAndFlush(frame).addListener(f -> {
            if (f.isSuccess()) {
                done.complete(null);
            } else {
                done.completeExceptionally(f.cause());
            }
        });
        return done;
    }

    @Override
    public long bufferedBytes() {
        return decoder.bufferedBytes();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        channel.close();
        var terminated = group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        if (!channel.eventLoop().inEventLoop()) {
            terminated.awaitUninterruptibly(10, TimeUnit.SECONDS);
        }
    }

    /** Hands decoded frames to the dispatcher and reports the end of the connection once. */
    static final class DispatchHandler extends ChannelInboundHandlerAdapter {
        private final FrameDispatcher dispatcher;
        private boolean active;
        private Throwable cause;

        DispatchHandler(FrameDispatcher dispatcher) {
            this.dispatcher = dispatcher;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            active = true;
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Frame frame) {
                dispatcher.onFrame(frame);
            } else if (msg instanceof StaleBytes stale) {
                dispatcher.onStale(stale.bytes());
            } else if (msg instanceof RejectedFrame rejected) {
                if (rejected.reason() instanceof FrameTruncatedException) {
                    cause = rejected.reason(); // the connection is ending; it fails every request at once
                } else {
                    dispatcher.onRejected(rejected.requestId(), rejected.reason());
                }
            } else {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable t) {
            if (cause == null) {
                cause = t instanceof DecoderException && t.getCause() != null ? t.getCause() : t;
            }
            ctx.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (active) {
                active = false;
                dispatcher.onLinkClosed(cause);
            }
            ctx.fireChannelInactive();
        }
    }
}
