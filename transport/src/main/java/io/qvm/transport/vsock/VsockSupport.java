package io.qvm.transport.vsock;

import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.LinuxSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Whether the vsock transport can work on this host, and if not, why. Two independent conditions:
 * the host process can open AF_VSOCK sockets (Linux, with Netty's epoll native library), and QEMU
 * can give the guest a vsock device ({@code /dev/vhost-vsock} exists and is read-write for this
 * user). Neither proves a guest will answer; the handshake does that.
 */
public final class VsockSupport {

    /** The default vhost device QEMU's {@code vhost-vsock-pci} opens. */
    public static final Path VHOST_VSOCK = Path.of("/dev/vhost-vsock");

    /** The verdict: {@code usable}, or the reason (and the remedy) when not. */
    public record Verdict(boolean usable, String reason) {
    }

    private VsockSupport() {
    }

    public static Verdict probe() {
        return probe(System.getProperty("os.name", ""), VHOST_VSOCK);
    }

    /** The probe with its inputs made explicit (tests). */
    public static Verdict probe(String osName, Path vhostDevice) {
        if (!osName.toLowerCase(Locale.ROOT).contains("linux")) {
            return new Verdict(false, "vhost-vsock exists only on Linux hosts, this is " + osName
                    + "; use the serial transport");
        }
        if (!Epoll.isAvailable()) {
            return new Verdict(false, "Netty's epoll native library, which opens AF_VSOCK sockets, did not load ("
                    + Epoll.unavailabilityCause() + "); use the serial transport");
        }
        try {
            LinuxSocket.newVSockStream().close();
        } catch (Throwable t) {
            return new Verdict(false, "the kernel refuses AF_VSOCK sockets (" + t.getMessage()
                    + "); load the vsock module or use the serial transport");
        }
        if (!Files.exists(vhostDevice)) {
            return new Verdict(false, vhostDevice + " does not exist: load the vhost_vsock kernel module"
                    + " (modprobe vhost_vsock) or use the serial transport");
        }
        if (!Files.isReadable(vhostDevice) || !Files.isWritable(vhostDevice)) {
            return new Verdict(false, vhostDevice + " is not read-write for this user: give the user access"
                    + " (often the kvm group) or use the serial transport");
        }
        return new Verdict(true, "AF_VSOCK sockets open and " + vhostDevice + " is read-write");
    }
}
