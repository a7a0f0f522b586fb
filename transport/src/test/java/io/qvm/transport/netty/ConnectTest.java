package io.qvm.transport.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Hello;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import io.qvm.transport.testing.FakeWorker;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class ConnectTest {

    private Path dir;

    @BeforeEach
    void dir() throws Exception {
        dir = Files.createTempDirectory(Path.of("/tmp"), "qvmc");
    }

    @AfterEach
    void cleanUp() throws Exception {
        Files.deleteIfExists(dir.resolve("w.sock"));
        Files.deleteIfExists(dir);
    }

    /** QEMU creates the socket a moment after it starts: the connect waits for it. */
    @Test
    void retriesWhileTheSocketIsAbsentThenConnects() throws Exception {
        Path sock = dir.resolve("w.sock");
        AtomicInteger polls = new AtomicInteger();
        CountDownLatch polledTwice = new CountDownLatch(2);
        CompletableFuture<SandboxTransport> connecting = CompletableFuture.supplyAsync(() -> {
            try {
                return SerialTransport.connect(sock, SandboxTransportTest.LIMITS, Duration.ofSeconds(30), () -> {
                    polls.incrementAndGet();
                    polledTwice.countDown();
                    return true;
                });
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertTrue(polledTwice.await(30, TimeUnit.SECONDS), "it keeps trying while the file is absent");
        try (FakeWorker w = FakeWorker.builder().unix(sock);
                SandboxTransport t = connecting.get(30, TimeUnit.SECONDS)) {
            t.handshake(Hello.fresh(SandboxTransportTest.LIMITS), Duration.ofSeconds(30));
            assertArrayEquals(new byte[] {4}, t.request(Frame.of(FrameKind.ECHO, 0, new byte[] {4}))
                    .get(30, TimeUnit.SECONDS).body());
            assertEquals(1, w.connectionsAccepted());
        }
        assertTrue(polls.get() >= 2);
    }

    @Test
    void failsFastWhenThePeerDies() {
        AtomicBoolean alive = new AtomicBoolean(true);
        AtomicInteger polls = new AtomicInteger();
        TransportException e = assertThrows(TransportException.class,
                () -> SerialTransport.connect(dir.resolve("never.sock"), SandboxTransportTest.LIMITS,
                        Duration.ofMinutes(10), () -> {
                            if (polls.incrementAndGet() == 3) {
                                alive.set(false);
                            }
                            return alive.get();
                        }));
        assertEquals(TransportException.Reason.CONNECT_FAILED, e.reason());
        assertTrue(e.getMessage().contains("the peer died"), e.getMessage());
        assertTrue(e.getMessage().contains("2 attempts"), e.getMessage());
    }

    @Test
    void deadlineNamesTheEndpointAndTheLastError() {
        Path sock = dir.resolve("never.sock");
        TransportException e = assertThrows(TransportException.class,
                () -> SerialTransport.connect(sock, SandboxTransportTest.LIMITS, Duration.ofMillis(300), () -> true));
        assertEquals(TransportException.Reason.CONNECT_FAILED, e.reason());
        assertTrue(e.getMessage().contains(sock.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("within PT0.3S"), e.getMessage());
        assertTrue(e.getCause() != null);
    }

    @Test
    void tcpRefusedUntilTheDeadline() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // free again once closed: connects are refused
        }
        InetSocketAddress addr = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
        TransportException e = assertThrows(TransportException.class,
                () -> TcpTransport.connect(addr, SandboxTransportTest.LIMITS, Duration.ofMillis(300), () -> true));
        assertEquals(TransportException.Reason.CONNECT_FAILED, e.reason());
        assertTrue(e.getMessage().contains("tcp "), e.getMessage());
    }

    @Test
    void nioIsAlwaysAvailableAndBestPicksTheNativeOneHere() {
        assertTrue(NettyIo.NIO.isAvailable());
        if (System.getProperty("os.name").toLowerCase().contains("linux")) {
            assertEquals(NettyIo.EPOLL, NettyIo.best(), "epoll should load on Linux: " + NettyIo.EPOLL.unavailabilityCause());
        }
    }
}
