package io.qvm.transport.bench;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.netty.SerialTransport;
import io.qvm.transport.testing.FakeWorker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One ECHO round trip over the serial transport (AF_UNIX, Netty epoll when it loads) against the
 * {@link FakeWorker} (blocking FrameReader/FrameWriter on JDK channels): host encode → socket →
 * worker decode → worker encode → socket → host decode → future.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 2)
@Fork(1)
public class EchoBenchmark {

    @Param({"16", "65536", "1048576"})
    public int bodyBytes;

    private Path dir;
    private FakeWorker worker;
    private SandboxTransport transport;
    private Frame request;

    @Setup
    public void setUp() throws Exception {
        Limits limits = new Limits(32 << 20, 32 << 20, 1, 1, 1, 60_000);
        dir = Files.createTempDirectory(Path.of("/tmp"), "qvmb");
        worker = FakeWorker.builder().unix(dir.resolve("w.sock"));
        transport = SerialTransport.connect(worker.socketPath(), limits, Duration.ofSeconds(10), () -> true);
        transport.handshake(Hello.fresh(limits), Duration.ofSeconds(10));
        request = Frame.of(FrameKind.ECHO, 0, new byte[bodyBytes]);
    }

    @Benchmark
    public Frame echoRoundTrip() throws Exception {
        return transport.request(request).get(30, TimeUnit.SECONDS);
    }

    @TearDown
    public void tearDown() throws Exception {
        transport.close();
        worker.close();
        Files.deleteIfExists(dir);
    }
}
