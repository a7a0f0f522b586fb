package io.qvm.transport.netty;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.kqueue.KQueue;
import io.netty.channel.kqueue.KQueueDomainSocketChannel;
import io.netty.channel.kqueue.KQueueIoHandler;
import io.netty.channel.kqueue.KQueueSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDomainSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.file.Path;

/**
 * Which Netty I/O implementation carries a transport: the native one of the OS when its library
 * loads (epoll on Linux, kqueue on macOS), else the JDK's NIO, which also speaks AF_UNIX since
 * Java 16. {@link #best()} picks; the others exist so tests can run every path.
 */
public enum NettyIo {
    EPOLL,
    KQUEUE,
    NIO;

    /** The native transport of this OS when it loads, else {@link #NIO}. */
    public static NettyIo best() {
        if (EPOLL.isAvailable()) {
            return EPOLL;
        }
        if (KQUEUE.isAvailable()) {
            return KQUEUE;
        }
        return NIO;
    }

    /** Whether this implementation can run here (its native library loaded). */
    public boolean isAvailable() {
        switch (this) {
            case EPOLL:
                return Epoll.isAvailable();
            case KQUEUE:
                return KQueue.isAvailable();
            default:
                return true;
        }
    }

    /** Why it cannot, or {@code null} when it can. */
    public Throwable unavailabilityCause() {
        switch (this) {
            case EPOLL:
                return Epoll.unavailabilityCause();
            case KQUEUE:
                return KQueue.unavailabilityCause();
            default:
                return null;
        }
    }

    IoHandlerFactory handlerFactory() {
        switch (this) {
            case EPOLL:
                return EpollIoHandler.newFactory();
            case KQUEUE:
                return KQueueIoHandler.newFactory();
            default:
                return NioIoHandler.newFactory();
        }
    }

    /** One I/O thread: a transport carries one connection. Shut it down with the transport. */
    EventLoopGroup newGroup(String name) {
        if (!isAvailable()) {
            throw new IllegalStateException("Netty " + this + " is not available here: " + unavailabilityCause());
        }
        return new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory(name, true), handlerFactory());
    }

    Class<? extends Channel> domainChannel() {
        switch (this) {
            case EPOLL:
                return EpollDomainSocketChannel.class;
            case KQUEUE:
                return KQueueDomainSocketChannel.class;
            default:
                return NioDomainSocketChannel.class;
        }
    }

    Class<? extends Channel> socketChannel() {
        switch (this) {
            case EPOLL:
                return EpollSocketChannel.class;
            case KQUEUE:
                return KQueueSocketChannel.class;
            default:
                return NioSocketChannel.class;
        }
    }

    SocketAddress domainAddress(Path socket) {
        return this == NIO ? UnixDomainSocketAddress.of(socket) : new DomainSocketAddress(socket.toFile());
    }
}
