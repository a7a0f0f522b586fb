package io.qvm.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.RenderFailedException;
import io.qvm.Sandbox;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.image.ImageBuilder;
import io.qvm.probe.ProbeWorker;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.image.Arch;
import io.qvm.QemuVmBackend;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The isolation of the sandbox, seen from inside it: an image with the {@link ProbeWorker} in
 * place of the renderer, booted with the real QEMU command line, init and runsc, reports what a
 * compromised worker could see and reach; and the real renderer, given documents that point at
 * a server this test runs on the host's loopback, makes no request to it.
 */
@Tag("e2e")
@Tag("qemu")
@Tag("security")
class IsolationE2ETest {

    @TempDir
    Path tmp;

    private ServerSocket hostServer;
    private final AtomicInteger connections = new AtomicInteger();
    private Thread acceptor;

    @BeforeEach
    void startHostServer() throws IOException {
        hostServer = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        acceptor = new Thread(() -> {
            while (!hostServer.isClosed()) {
                try (Socket s = hostServer.accept()) {
                    connections.incrementAndGet();
                } catch (IOException e) {
                    return;
                }
            }
        }, "host-loopback-server");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    @AfterEach
    void stopHostServer() throws Exception {
        hostServer.close();
        acceptor.join(10_000);
    }

    @Test
    void aCompromisedWorkerHasNoNetworkSeesGvisorAndWritesOnlyTmp() throws Exception {
        HostInfo host = HostProbe.system().probe();
        assumeTrue(host.arch() == Arch.X86_64, "boots the x86_64 image: x86_64 hosts only");
        QemuInstallation qemu = host.qemu(Arch.X86_64).orElse(null);
        assumeTrue(qemu != null, "no qemu-system-x86_64");
        ImageBuilder.Result image = ProbeGuests.image(tmp.resolve("probe"), ProbeWorker.class);
        Path run = Files.createDirectories(tmp.resolve("r"));
        List<String> argv = ProbeGuests.argv(host, qemu, image, run);
        assertFalse(argv.stream().anyMatch(a -> a.startsWith("-net") || a.contains("netdev") || a.contains("-nic")),
                "no network device on the command line: " + argv);
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).redirectOutput(run.resolve("qemu.out").toFile())
                .start();
        JsonNode report;
        try {
            await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(run.resolve("worker.sock")) || !p.isAlive());
            try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                ch.connect(UnixDomainSocketAddress.of(run.resolve("worker.sock")));
                String ready = ProbeGuests.readLine(ch, Duration.ofMinutes(6), run);
                assertEquals("qvm-probe: ready", ready, ProbeGuests.console(run));
                ch.write(ByteBuffer.wrap(("probe " + hostServer.getLocalPort() + "\n").getBytes(StandardCharsets.US_ASCII)));
                String json = ProbeGuests.readLine(ch, Duration.ofMinutes(3), run);
                E2e.log("probe report: " + json);
                report = new ObjectMapper().readTree(json);
            }
            assertTrue(p.waitFor(3, TimeUnit.MINUTES), "the guest powers off when the probe exits\n" + ProbeGuests.console(run));
        } finally {
            p.destroyForcibly();
            p.waitFor();
        }

        // Network: nothing but loopback, no route, and the host's loopback server saw nothing.
        for (JsonNode ni : report.path("interfaces")) {
            if (ni.isTextual()) {
                // The worker's seccomp profile allows sockets of AF_UNIX only: Java cannot even
                // open the AF_INET socket it lists interfaces with.
                assertTrue(ni.asText().contains("Operation not permitted"), "interfaces: " + ni);
                continue;
            }
            assertTrue(ni.path("loopback").asBoolean(), "only loopback: " + ni);
            for (JsonNode a : ni.path("addresses")) {
                assertTrue(a.asText().startsWith("127.") || a.asText().startsWith("0:0:0:0:0:0:0:1"), "address " + a);
            }
        }
        for (JsonNode name : report.path("proc_net_dev")) {
            assertTrue(name.asText().equals("lo") || name.asText().startsWith("Inter-") || name.asText().startsWith(
                    "face"), "an interface besides loopback: " + report.path("proc_net_dev"));
        }
        assertEquals(0, report.path("routes").path("ipv4").size(), "no IPv4 route: " + report.path("routes"));
        assertEquals(0, report.path("routes").path("ipv6").size(), "no IPv6 route: " + report.path("routes"));
        report.path("connect").fields().forEachRemaining(e ->
                assertTrue(e.getValue().asText().startsWith("refused"), e.getKey() + ": " + e.getValue()));
        assertEquals(0, connections.get(), "connections that reached the host's loopback server");

        // The kernel the worker sees is gVisor's, not the guest's Linux.
        String guestKernel = image.kernelVersion();
        String seen = report.path("kernel").path("proc_version").asText();
        assertFalse(seen.contains(guestKernel), "the worker sees the guest kernel " + guestKernel + ": " + seen);
        assertFalse(report.path("kernel").path("os.version").asText().contains(guestKernel));

        // What it can read: no guest devices, firmware or kernel memory.
        JsonNode read = report.path("read");
        for (String denied : new String[] {"/proc/kcore", "/dev/mem", "/dev/kmsg", "/dev/vport0p1", "/dev/vport0p2",
            "/dev/vport0p3", "/dev/hvc0", "/dev/ttyS0", "/dev/kvm", "/bundle", "/run/runsc", "/init"}) {
            assertTrue(read.path(denied).asText().startsWith("denied"), denied + ": " + read.path(denied));
        }
        String dev = read.path("/dev").asText();
        for (String node : dev.replace("listed: ", "").split(" ")) {
            // gVisor's own devices (fuse is unusable: no CAP_SYS_ADMIN, and mount is outside the
            // seccomp profile; net/tun likewise): none is a device of the guest.
            assertTrue(List.of("fd", "full", "fuse", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
                    "tty", "urandom", "zero", "net", "").contains(node), "device in the sandbox: " + node + " (" + dev + ")");
        }
        assertFalse(read.path("/sys/firmware").asText().matches("listed: .*\\S.*"), "firmware: " + read.path("/sys/firmware"));

        // Where it can write: /tmp only.
        report.path("write").fields().forEachRemaining(e -> assertEquals(e.getKey().equals("/tmp"),
                e.getValue().asText().equals("writable"), e.getKey() + ": " + e.getValue()));
    }

    /** Documents that point at the host's loopback (directly, and where user networking would put it). */
    @Test
    void documentsThatPointAtTheHostCauseNoRequest() throws Exception {
        int port = hostServer.getLocalPort();
        List<String> targets = List.of("http://127.0.0.1:" + port + "/x.png", "http://10.0.2.2:" + port + "/x.png",
                "http://localhost:" + port + "/x.svg", "https://127.0.0.1:" + port + "/x.png");
        List<RenderRequest> docs = new ArrayList<>();
        for (String t : targets) {
            docs.add(RenderRequest.svg(("<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink' "
                    + "width='40' height='40'><image x='0' y='0' width='40' height='40' xlink:href='" + t + "'/></svg>")
                    .getBytes(StandardCharsets.UTF_8)));
            docs.add(RenderRequest.svg(("<svg xmlns='http://www.w3.org/2000/svg' width='40' height='40'>"
                    + "<style>@import url(" + t + "); rect { fill: url(" + t + "#p) }</style><rect width='40' height='40'/></svg>")
                    .getBytes(StandardCharsets.UTF_8)));
            docs.add(RenderRequest.svg(("<?xml version='1.0'?><!DOCTYPE svg SYSTEM '" + t + "'>"
                    + "<svg xmlns='http://www.w3.org/2000/svg' width='40' height='40'/>").getBytes(StandardCharsets.UTF_8)));
        }
        Path state = tmp.resolve("state"); // the backend creates it private
        List<String> outcomes = new ArrayList<>();
        try (QemuVmBackend backend = E2e.backend(state); Sandbox s = backend.start(E2e.config().build())) {
            for (RenderRequest r : docs) {
                try {
                    s.render(r);
                    outcomes.add("OK");
                } catch (RenderFailedException e) {
                    outcomes.add(e.code().name());
                }
            }
        }
        E2e.log("outcomes: " + outcomes);
        assertEquals(docs.size(), outcomes.size());
        assertEquals(0, connections.get(), "requests that reached the host's loopback server");
    }
}
