package io.qvm.transport.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.transport.netty.FrameDecoder;
import io.qvm.transport.netty.FrameEncoder;
import java.io.ByteArrayInputStream;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Codec throughput: one frame of {@code bodyBytes} encoded (Netty encoder), decoded (Netty
 * decoder, whole frame in one buffer) and read (blocking {@link FrameReader}). Divide
 * ops/s × bodyBytes for bytes/s. See adr/0003 for how to run it.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 2)
@Fork(1)
public class CodecBenchmark {

    @Param({"1024", "65536", "1048576"})
    public int bodyBytes;

    private Frame frame;
    private byte[] wire;
    private EmbeddedChannel encoder;
    private EmbeddedChannel decoder;
    private final FrameLimits limits = FrameLimits.ofBody(32 << 20);

    @Setup
    public void setUp() throws Exception {
        byte[] body = new byte[bodyBytes];
        new Random(1).nextBytes(body);
        frame = new Frame(FrameKind.ECHO, 42, com.fasterxml.jackson.databind.node.JsonNodeFactory.instance
                .objectNode().put("format", "png").put("dpi", 96), body);
        wire = FrameCodec.encode(frame, limits);
        encoder = new EmbeddedChannel(new FrameEncoder(limits));
        decoder = new EmbeddedChannel(new FrameDecoder(limits));
    }

    @Benchmark
    public int nettyEncode() {
        encoder.writeOutbound(frame);
        ByteBuf out = encoder.readOutbound();
        int n = out.readableBytes();
        out.release();
        return n;
    }

    @Benchmark
    public Object nettyDecode() {
        decoder.writeInbound(Unpooled.wrappedBuffer(wire));
        return decoder.readInbound();
    }

    @Benchmark
    public Frame blockingRead() throws Exception {
        return new FrameReader(new ByteArrayInputStream(wire), limits).read();
    }
}
