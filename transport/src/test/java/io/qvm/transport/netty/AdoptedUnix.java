package io.qvm.transport.netty;

import static org.awaitility.Awaitility.await;

import io.netty.channel.epoll.LinuxSocket;
import io.netty.channel.unix.DomainSocketAddress;
import io.qvm.protocol.Limits;
import io.qvm.transport.SandboxTransport;
import java.nio.file.Path;
import java.time.Duration;

/** Connects an AF_UNIX socket by hand and hands it to the vsock transport's adoption path. */
final class AdoptedUnix {
    private AdoptedUnix() {
    }

    static SandboxTransport connect(Path socket, Limits limits) throws Exception {
        return connect(socket, limits, FrameDecoder.DEFAULT_STALL_TIMEOUT);
    }

    static SandboxTransport connect(Path socket, Limits limits, Duration frameStallTimeout) throws Exception {
        LinuxSocket fd = LinuxSocket.newSocketDomain();
        if (!fd.connect(new DomainSocketAddress(socket.toFile()))) {
            await("the connection to " + socket).atMost(Duration.ofSeconds(60)).pollInSameThread()
                    .pollInterval(Duration.ofMillis(1)).until(fd::finishConnect);
        }
        return VsockTransport.adopt(VsockTransport.KIND, fd, limits, frameStallTimeout);
    }
}
