package io.qvm.transport.netty;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameTooLargeException;
import java.util.List;
import java.util.Objects;

/**
 * Writes a {@link Frame} in the {@link FrameCodec} format without copying its body:
 *
 * <pre>
 *  Frame(kind, id, header, body)
 *     → one composite buffer: [ prefix 28 | header H ] (new array) + [ body B ] (the Frame's array, wrapped)
 * </pre>
 *
 * A frame above the peer's limits is refused before a byte is written: the write's promise fails
 * with an {@code EncoderException} whose cause is {@link FrameTooLargeException}. Stateless, so
 * one instance may serve many channels.
 */
@Sharable
public final class FrameEncoder extends MessageToMessageEncoder<Frame> {

    private final FrameLimits peerLimits;

    /** @param peerLimits what the reader on the other side accepts (for the host: the max request size) */
    public FrameEncoder(FrameLimits peerLimits) {
        super(Frame.class);
        this.peerLimits = Objects.requireNonNull(peerLimits, "peerLimits");
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, Frame frame, List<Object> out) throws FrameTooLargeException {
        byte[] head = FrameCodec.encodePrefixAndHeader(frame, peerLimits);
        out.add(frame.body().length == 0 ? Unpooled.wrappedBuffer(head) : Unpooled.wrappedBuffer(head, frame.body()));
    }
}
