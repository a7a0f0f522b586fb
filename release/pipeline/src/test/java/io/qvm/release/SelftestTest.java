package io.qvm.release;

import io.qvm.admin.HostReport;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.FakeQemuHost;
import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.probe.QemuLocator;
import io.qvm.protocol.image.Arch;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code qvm selftest}'s report, driven through the real gate and backend against {@code FakeQemu}
 * (a peer that plays QEMU and the guest on the real sockets; nothing boots): it names the QEMU
 * that ran with its hash, the accelerator the boot got, each image file with its hash and each
 * step; an image that is not there fails the selftest with a fix before anything starts.
 */
@Tag("unit")
class SelftestTest {

    @TempDir
    Path tmp;

    Selftest selftest(FakeQemuHost host) {
        QemuLocator locator = new QemuLocator(HostOs.LINUX, Map.of("QVM_QEMU", tmp.resolve("host/bin").toString()),
                p -> p.startsWith(tmp) && Files.isRegularFile(p) && Files.isExecutable(p));
        return new Selftest(new HostGate.Options(host::backend, FakeQemuHost.config().build(),
                FakeQemuHost.config().build(), Duration.ofSeconds(30), Set.of(), host.runtimeRoot(), true),
                () -> new HostProbe("Linux", "amd64", locator, CommandRunner.system()).probe().qemus().values().stream()
                        .map(q -> new HostReport.Qemu(q.guestArch(), q.binary(), q.version().toString(),
                                q.compiledIn().stream().sorted().toList())).toList());
    }

    @Test
    void aPassingRunReportsTheQemuTheAcceleratorTheImageHashesAndEveryStep() throws Exception {
        FakeQemuHost host = new FakeQemuHost(tmp.resolve("host")).set("renderPng", "64x48");
        Selftest.Report r = selftest(host).run(host.imageRoot(), Arch.X86_64, false, line -> { });

        assertTrue(r.ok(), r.verdict() + " " + r.steps());
        assertEquals("qvm.selftest/1", r.schema());
        assertTrue(r.verdict().startsWith("PROVEN: ") && r.verdict().contains("× tcg"), r.verdict());
        assertEquals("tcg", r.accelerator());
        assertEquals(tmp.resolve("host/bin/qemu-system-x86_64").toString(), r.qemu().binary());
        assertEquals(Selftest.sha256(tmp.resolve("host/bin/qemu-system-x86_64")), r.qemu().sha256());
        assertNull(r.qemu().problem());
        assertEquals(Selftest.sha256(host.imageRoot().resolve("x86_64/vmlinuz")), r.image().files().get("vmlinuz"));
        assertTrue(r.image().files().containsKey("initramfs.cpio.lz4"), r.image().files().toString());
        assertEquals(List.of("x86_64:boot", "x86_64:handshake", "x86_64:render-svg", "x86_64:render-pdf", "x86_64:clones", "x86_64:stop",
                "x86_64:nothing-left"), r.steps().stream().map(ReleaseStep::name).toList());
        assertEquals("short", r.suite());

        JsonNode json = new ObjectMapper().readTree(new ObjectMapper().writeValueAsString(r));
        assertEquals("qvm.selftest/1", json.get("schema").asText());
        assertEquals(r.qemu().sha256(), json.get("qemu").get("sha256").asText());
        StringWriter md = new StringWriter();
        r.printMarkdown(new PrintWriter(md));
        assertTrue(md.toString().startsWith("# qvm selftest PASSED"), md.toString());
        assertTrue(md.toString().contains("| x86_64:nothing-left | yes |"), md.toString());
        await().atMost(Duration.ofSeconds(30)).until(() -> host.processes().stream().noneMatch(ProcessHandle::isAlive));
    }

    @Test
    void aMissingImageFailsBeforeAnythingStartsAndSaysHowToGetOne() throws Exception {
        FakeQemuHost host = new FakeQemuHost(tmp.resolve("host"));
        Selftest.Report r = selftest(host).run(tmp.resolve("nowhere"), Arch.AARCH64, false, line -> { });

        assertFalse(r.ok());
        assertEquals(List.of("aarch64:image"), r.steps().stream().map(ReleaseStep::name).toList());
        assertTrue(r.verdict().contains("qvm image build --arch aarch64"), r.verdict());
        assertEquals(0, host.boots());
    }
}
