package io.qvm.transport.netty;

import io.netty.channel.epoll.LinuxSocket;
import io.netty.channel.unix.DomainSocketAddress;
import io.qvm.protocol.Limits;
import io.qvm.transport.SandboxTransport;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

/** Connects an AF_UNIX socket by hand and hands it to the vsock transport's adoption path. */
final class AdoptedUnix {
    private AdoptedUnix() {
    }

    static SandboxTransport connect(Path socket, Limits limits) throws Exception {
        LinuxSocket fd = LinuxSocket.newSocketDomain();
        boolean connected = fd.connect(new DomainSocketAddress(socket.toFile()));
        while (!connected) {
            LockSupport.parkNanos(1_000_000);
            connected = fd.finishConnect();
        }
        return VsockTransport.adopt(VsockTransport.KIND, fd, limits);
    }
}
