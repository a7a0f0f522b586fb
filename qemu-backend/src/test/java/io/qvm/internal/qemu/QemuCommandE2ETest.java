package io.qvm.internal.qemu;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import io.qvm.SandboxConfig;
import io.qvm.protocol.image.Arch;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.probe.TestImages;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the TCG argv {@link QemuCommand} produces for this host with the real QEMU and a real
 * kernel, to prove QEMU accepts every flag: the guest (a busybox initramfs standing in for the
 * image) must print its marker and the kernel command line on the console file, QMP must greet on
 * its socket, the worker socket must accept, and QEMU must exit 0 when the guest powers off.
 */
@Tag("e2e")
@Tag("qemu")
class QemuCommandE2ETest {

    @TempDir
    Path dir;

    @Test
    void qemuAcceptsTheTcgCommandLineAndTheGuestBoots() throws Exception {
        HostInfo host = HostProbe.system().probe();
        Assumptions.assumeTrue(host.arch() == Arch.X86_64, "x86_64 host only");
        Optional<QemuInstallation> qemu = host.qemu(Arch.X86_64);
        Optional<Path> kernel = TestImages.x86Kernel();
        Optional<Path> busybox = TestImages.staticBusybox();
        Assumptions.assumeTrue(qemu.isPresent(), "no qemu-system-x86_64");
        Assumptions.assumeTrue(kernel.isPresent(), "no x86_64 kernel (set QVM_TEST_KERNEL or build out/image/x86_64)");
        Assumptions.assumeTrue(busybox.isPresent(), "no static busybox (apt-get install busybox-static)");
        Path initrd = TestImages.busyboxInitramfs(busybox.get(), "qvm-e2e: init ran", dir.resolve("initrd.gz"));

        List<String> argv = QemuCommand.build(QemuCommandInput.builder().host(host.os(), host.arch())
                .guestArch(Arch.X86_64).accelerator(Accelerator.TCG)
                .qemu(qemu.get()).config(SandboxConfig.defaults())
                .image(kernel.get(), initrd).qmpSocket(dir.resolve("qmp.sock"))
                .consoleLog(dir.resolve("console.log")).eventsLog(dir.resolve("events.log")).pidFile(dir.resolve("qemu.pid"))
                .controlSocket(dir.resolve("control.sock"))
                .transport(new GuestTransport.Serial(dir.resolve("worker.sock"))).build());
        System.out.println("argv: " + String.join(" ", argv));

        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(argv).redirectErrorStream(true)
                .redirectOutput(dir.resolve("qemu.out").toFile()).start();
        try {
            String greeting = qmpGreeting(dir.resolve("qmp.sock"), p, dir.resolve("qemu.out"));
            assertTrue(greeting.contains("\"QMP\""), greeting);
            try (SocketChannel worker = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                worker.connect(UnixDomainSocketAddress.of(dir.resolve("worker.sock")));
            }
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "guest did not power off within 120 s; console:\n"
                    + Files.readString(dir.resolve("console.log")));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            String console = Files.readString(dir.resolve("console.log"));
            String out = Files.readString(dir.resolve("qemu.out"));
            System.out.println("QEMU " + qemu.get().version() + " TCG " + argv.get(argv.indexOf("-M") + 1) + ": wall " + ms + " ms to exit; "
                    + console.lines().filter(l -> l.contains("qvm-e2e")).findFirst().orElse("(no marker)"));
            assertEquals(0, p.exitValue(), "QEMU exit status; its output:\n" + out + "\nconsole:\n" + console);
            assertTrue(console.contains("qvm-e2e: init ran"), console);
            assertTrue(console.contains("qvm.transport=serial qvm.port=qvm.worker qvm.control_port=qvm.control "
                    + "qvm.events_port=qvm.events qvm.xmx_mib=576 qvm.cpus=2 qvm.tmp_mib=64 qvm.platform=systrap"), console);
            assertTrue(!out.contains("warning") && !out.contains("error"), "QEMU complained:\n" + out);
        } finally {
            p.destroyForcibly();
            p.waitFor();
        }
    }

    private static String qmpGreeting(Path socket, Process p, Path output) throws Exception {
        await("QEMU's QMP socket " + socket).atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20))
                .failFast(() -> {
                    if (!p.isAlive()) {
                        throw new AssertionError("QEMU exited (" + p.exitValue() + ") before it made its QMP socket; "
                                + "its output:\n" + Files.readString(output));
                    }
                })
                .until(() -> Files.exists(socket));
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socket));
            ByteBuffer buf = ByteBuffer.allocate(4096);
            StringBuilder sb = new StringBuilder();
            while (sb.indexOf("\n") < 0 && ch.read(buf) > 0) {
                buf.flip();
                sb.append(StandardCharsets.UTF_8.decode(buf));
                buf.clear();
            }
            return sb.toString();
        }
    }
}
