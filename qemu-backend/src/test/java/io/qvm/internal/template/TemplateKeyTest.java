package io.qvm.internal.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.Accelerator;
import io.qvm.RunscPlatform;
import io.qvm.SandboxConfig;
import io.qvm.internal.image.GuestImage;
import io.qvm.protocol.image.ImageManifest;
import io.qvm.protocol.image.Arch;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.host.QemuVersion;
import io.qvm.internal.qemu.GuestTransport;
import io.qvm.internal.qemu.QemuCommandInput;
import io.qvm.internal.qemu.VmRole;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a template key depends on: everything that shapes the saved guest, and nothing that is
 * per run (paths) or per request (limits, deadlines).
 */
@Tag("unit")
class TemplateKeyTest {

    private static final SandboxConfig CONFIG = SandboxConfig.defaults();
    private static final FileTime MTIME = FileTime.from(Instant.parse("2025-06-01T12:00:00Z"));
    private static final String VERSION = "7.2.22";
    private static final Map<String, String> SHAS = Map.of(
            GuestImage.KERNEL, "1".repeat(64),
            GuestImage.INITRD, "2".repeat(64),
            GuestImage.MANIFEST, "3".repeat(64));

    @TempDir
    Path tmp;

    private Path qemuBinary;

    @BeforeEach
    void fakeQemuBinary() throws Exception {
        qemuBinary = binary("usr-bin", "not really qemu\n");
    }

    /** A "QEMU binary" at {@code <tmp>/<dir>/qemu-system-x86_64} with a fixed mtime. */
    private Path binary(String dir, String content) throws Exception {
        Path p = Files.createDirectories(tmp.resolve(dir)).resolve("qemu-system-x86_64");
        Files.writeString(p, content);
        Files.setLastModifiedTime(p, MTIME);
        return p;
    }

    /** As GoldenCases: a Linux x86_64 host, all of one sandbox's runtime paths under {@code run}. */
    private static QemuCommandInput.Builder input(String run, Path bin, String version, SandboxConfig config) {
        return QemuCommandInput.builder().host(HostOs.LINUX, Arch.X86_64).guestArch(Arch.X86_64)
                .accelerator(Accelerator.TCG).qemu(bin, QemuVersion.of(version))
                .capabilities(io.qvm.internal.probe.QemuBuilds.capabilities("debian-12-backports-x86_64")).config(config)
                .image(Path.of("/srv/qvm/out/image/x86_64/vmlinuz"), Path.of("/srv/qvm/out/image/x86_64/initramfs.cpio.lz4"))
                .qmpSocket(Path.of(run + "/qmp.sock")).consoleLog(Path.of(run + "/console.log")).eventsLog(Path.of(run + "/events.log"))
                .pidFile(Path.of(run + "/qemu.pid")).controlSocket(Path.of(run + "/control.sock"))
                .transport(new GuestTransport.Serial(Path.of(run + "/worker.sock")));
    }

    private QemuCommandInput.Builder input() {
        return input("/run/user/1000/qvm/s1", qemuBinary, VERSION, CONFIG);
    }

    private QemuCommandInput.Builder input(SandboxConfig config) {
        return input("/run/user/1000/qvm/s1", qemuBinary, VERSION, config);
    }

    private static GuestImage image(String dir, Map<String, String> shas) {
        try {
            return new GuestImage(Arch.X86_64, Path.of(dir), ImageManifest.parse("{}"), shas);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static GuestImage image() {
        return image("/srv/qvm/out/image/x86_64", SHAS);
    }

    private static QemuInstallation qemu(Path bin, String version) {
        return new QemuInstallation(Arch.X86_64, bin, QemuVersion.of(version), Set.of(Accelerator.TCG, Accelerator.KVM));
    }

    private QemuInstallation qemu() {
        return qemu(qemuBinary, VERSION);
    }

    private TemplateKey base() {
        return TemplateKey.of(input().build(), TemplateMode.SHARED_RAM, image(), qemu());
    }

    private static Map<String, String> shas(String file, String sha) {
        Map<String, String> m = new HashMap<>(SHAS);
        m.put(file, sha);
        return m;
    }

    @Test
    void theSameInputsGiveTheSameKey() {
        TemplateKey a = base();
        TemplateKey b = base();
        assertEquals(a, b);
        assertEquals(a.hash(), b.hash());
        assertEquals(64, a.hash().length());
        assertEquals(20, a.id().length());
        assertTrue(a.hash().startsWith(a.id()));
        assertEquals(a.hash(), new TemplateKey(new TreeMap<>(a.inputs())).hash(), "a key is its inputs");
    }

    @Test
    void theInputsAreTheDocumentedOnes() {
        Map<String, String> in = base().inputs();
        assertEquals(Set.of("format", "mode", "argv", "image.vmlinuz", "image.initramfs.cpio.lz4", "image.manifest.json",
                "qemu.binary", "qemu.version", "qemu.size", "qemu.mtime"), in.keySet());
        assertEquals(TemplateKey.FORMAT, in.get("format"));
        assertEquals("shared-ram", in.get("mode"));
        assertEquals("2".repeat(64), in.get("image.initramfs.cpio.lz4"));
        assertEquals(qemuBinary.toString(), in.get("qemu.binary"));
        assertEquals(VERSION, in.get("qemu.version"));
        assertEquals(Long.toString("not really qemu\n".length()), in.get("qemu.size"));
        assertEquals(MTIME.toString(), in.get("qemu.mtime"));
        String argv = in.get("argv");
        assertTrue(argv.contains("\n-m\n1024M\n"), argv);
        assertFalse(argv.contains("/run/user/1000"), "no per-run path in the key: " + argv);
        assertFalse(argv.contains("/srv/qvm"), "no image directory in the key: " + argv);
    }

    @Test
    void everyInputThatShapesTheGuestChangesTheKey() throws Exception {
        Path sameBytesElsewhere = binary("usr-local-bin", "not really qemu\n");
        Map<String, TemplateKey> variants = new LinkedHashMap<>();
        variants.put("base", base());
        variants.put("memoryMib", TemplateKey.of(input(CONFIG.newBuilder().memoryMib(2048).build()).build(),
                TemplateMode.SHARED_RAM, image(), qemu()));
        variants.put("vcpus", TemplateKey.of(input(CONFIG.newBuilder().vcpus(4).build()).build(),
                TemplateMode.SHARED_RAM, image(), qemu()));
        variants.put("guestTmpMib", TemplateKey.of(input(CONFIG.newBuilder().guestTmpMib(128).build()).build(),
                TemplateMode.SHARED_RAM, image(), qemu()));
        variants.put("runscPlatform", TemplateKey.of(
                input(CONFIG.newBuilder().runscPlatform(RunscPlatform.PTRACE).build()).build(),
                TemplateMode.SHARED_RAM, image(), qemu()));
        variants.put("accelerator", TemplateKey.of(input().accelerator(Accelerator.KVM).build(),
                TemplateMode.SHARED_RAM, image(), qemu()));
        variants.put("image initrd hash", TemplateKey.of(input().build(), TemplateMode.SHARED_RAM,
                image("/srv/qvm/out/image/x86_64", shas(GuestImage.INITRD, "4".repeat(64))), qemu()));
        variants.put("image kernel hash", TemplateKey.of(input().build(), TemplateMode.SHARED_RAM,
                image("/srv/qvm/out/image/x86_64", shas(GuestImage.KERNEL, "5".repeat(64))), qemu()));
        variants.put("QEMU version", TemplateKey.of(input("/run/user/1000/qvm/s1", qemuBinary, "8.2.0", CONFIG).build(),
                TemplateMode.SHARED_RAM, image(), qemu(qemuBinary, "8.2.0")));
        variants.put("QEMU version as probed", TemplateKey.of(input().build(), TemplateMode.SHARED_RAM, image(),
                qemu(qemuBinary, "7.2.23")));
        variants.put("QEMU binary path", TemplateKey.of(
                input("/run/user/1000/qvm/s1", sameBytesElsewhere, VERSION, CONFIG).build(), TemplateMode.SHARED_RAM,
                image(), qemu(sameBytesElsewhere, VERSION)));
        variants.put("mode", TemplateKey.of(input().build(), TemplateMode.FULL, image(), qemu()));

        variants.forEach((name, key) -> variants.forEach((other, otherKey) -> {
            if (!name.equals(other)) {
                assertNotEquals(key.hash(), otherKey.hash(), name + " and " + other + " must have different keys");
            }
        }));
        assertEquals(variants.get("base").inputs().get("qemu.size"),
                variants.get("QEMU binary path").inputs().get("qemu.size"), "only the path differs");
        assertEquals("full", variants.get("mode").inputs().get("mode"));
    }

    @Test
    void theTemplateVmsWarmUpIsAnInputOfItsOwn() {
        TemplateKey off = base().withWarmUp("off");
        TemplateKey warmed = base().withWarmUp("a".repeat(64));
        assertEquals("off", off.inputs().get("warm-up"));
        assertEquals(base().inputs().size() + 1, off.inputs().size(), "one more input, the rest as they were");
        assertNotEquals(off.hash(), warmed.hash(), "a warmed template is another template than an unwarmed one");
        assertNotEquals(warmed.hash(), base().withWarmUp("b".repeat(64)).hash(), "and than one warmed otherwise");
        assertEquals(warmed, base().withWarmUp("a".repeat(64)));
    }

    @Test
    void aQemuUpgradedInPlaceChangesTheKey() throws Exception {
        TemplateKey before = base();
        Files.writeString(qemuBinary, "not really qemu, but longer\n");
        Files.setLastModifiedTime(qemuBinary, MTIME);
        TemplateKey resized = base();
        assertNotEquals(before.hash(), resized.hash(), "another size");

        Files.setLastModifiedTime(qemuBinary, FileTime.from(MTIME.toInstant().plusSeconds(1)));
        TemplateKey touched = base();
        assertNotEquals(resized.hash(), touched.hash(), "another mtime");
        assertEquals(resized.inputs().get("qemu.size"), touched.inputs().get("qemu.size"));
    }

    @Test
    void perRunPathsDoNotChangeTheKey() {
        TemplateKey key = base();
        QemuCommandInput elsewhere = input("/tmp/qvm-other/s99", qemuBinary, VERSION, CONFIG)
                .image(Path.of("/opt/images/x86_64/vmlinuz"), Path.of("/opt/images/x86_64/initramfs.cpio.lz4"))
                .build();
        assertEquals(key, TemplateKey.of(elsewhere, TemplateMode.SHARED_RAM, image(), qemu()), "sockets, console, pid");
        assertEquals(key, TemplateKey.of(input().build(), TemplateMode.SHARED_RAM,
                image("/home/someone/qvm/out/image/x86_64", SHAS), qemu()), "image directory");
        for (VmRole role : new VmRole[] {
                new VmRole.Template(Optional.of(Path.of("/home/a/.cache/qvm/templates/x/ram"))),
                new VmRole.Template(Optional.of(Path.of("/var/tmp/other/ram"))),
                new VmRole.Clone(Optional.of(Path.of("/var/tmp/other/ram"))),
                VmRole.cold()}) {
            assertEquals(key, TemplateKey.of(input().role(role).build(), TemplateMode.SHARED_RAM, image(), qemu()),
                    "RAM file and role: " + role);
        }
    }

    @Test
    void requestLimitsDoNotChangeTheKey() {
        TemplateKey key = base();
        SandboxConfig limits = CONFIG.newBuilder().maxPixels(20_000_000L).requestTimeout(Duration.ofSeconds(5))
                .bootTimeout(Duration.ofSeconds(30)).maxRequestBytes(1 << 20).maxResponseBytes(2 << 20).maxSide(800)
                .maxPages(3).build();
        assertNotEquals(CONFIG, limits);
        assertEquals(key, TemplateKey.of(input(limits).build(), TemplateMode.SHARED_RAM, image(), qemu()));
    }

    @Test
    void aMissingBinaryStillGivesAKeyThatDiffersFromThePresentOne() throws Exception {
        TemplateKey present = base();
        Files.delete(qemuBinary);
        TemplateKey missing = base();
        assertEquals("?", missing.inputs().get("qemu.size"));
        assertNotEquals(present.hash(), missing.hash());
    }
}
