package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.image.OciConfig;
import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageManifest;
import io.qvm.protocol.util.Sha256;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.cyclonedx.model.Bom;
import org.cyclonedx.model.Component;
import org.cyclonedx.model.License;
import org.cyclonedx.parsers.JsonParser;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The SBOM against the real lock: written by CycloneDX's library, read back by its parser, it
 * lists every pinned Debian package of the architecture — name, version, architecture, the .deb's
 * SHA-256, its purl, the licences its copyright names — and the worker jar with its Maven
 * closure (versions and SHA-256s); an image not built from the lock and a Maven artifact without a
 * hash are refused.
 */
@Tag("unit")
class ImageSbomTest {

    static final PackageLock LOCK = PackageLock.bundled();

    static ImageManifest manifest(Arch arch, List<PackageLock.Entry> entries, byte[] jar) {
        return new ImageManifest(ImageManifest.FORMAT, arch.id(), arch.debian(), arch.console(),
                new ImageManifest.Kernel("6.1.0-test", "linux", List.of()), null, null, true,
                new ImageManifest.WorkerJar(OciConfig.WORKER_JAR, Sha256.of(jar), jar.length), null, 0,
                entries.stream().map(e -> new ImageManifest.Input(e.name(), e.role().id(), e.suite(), e.version(),
                        e.architecture(), e.sha256())).toList(),
                List.of(new ImageManifest.Output("initramfs.cpio.lz4", "a".repeat(64), 10),
                        new ImageManifest.Output("vmlinuz", "b".repeat(64), 20)), null, null, true);
    }

    static ImageSbom.Inputs inputs(Arch arch, boolean workerWithoutSha) {
        byte[] jar = WorkerBoms.jar(WorkerBoms.bom(workerWithoutSha));
        List<PackageLock.Entry> entries = LOCK.entries(arch);
        Map<String, List<String>> licenses = new HashMap<>();
        for (PackageLock.Entry e : entries) {
            licenses.put(e.name(), DebianCopyright.licenses(SyntheticImages.copyright(e.name())));
        }
        WorkerBom.Read worker = new WorkerBom.Read(WorkerBom.fromJar(jar, "test.jar"), Sha256.of(jar), jar.length);
        return new ImageSbom.Inputs(arch, "9.9.9", manifest(arch, entries, jar), entries, licenses, worker);
    }

    @ParameterizedTest
    @EnumSource(Arch.class)
    void everyPinnedPackageAndEveryMavenArtifactIsListedWithItsVersionAndHash(Arch arch) throws Exception {
        ImageSbom.Result r = ImageSbom.create(inputs(arch, false));
        Bom bom = new JsonParser().parse(r.json().getBytes(StandardCharsets.UTF_8));
        assertEquals("1.6", bom.getSpecVersion());
        assertTrue(new JsonParser().isValid(r.json().getBytes(StandardCharsets.UTF_8)));

        Component image = bom.getMetadata().getComponent();
        assertEquals("pkg:maven/io.qvm/qvm-image@9.9.9?classifier=" + arch.id() + "&type=zip", image.getPurl());
        assertEquals("a".repeat(64), property(image, "qvm:sha256:initramfs.cpio.lz4").orElseThrow());

        Map<String, Component> debs = bom.getComponents().stream()
                .filter(c -> property(c, ImageSbom.ECOSYSTEM).orElse("").equals("debian"))
                .collect(Collectors.toMap(Component::getName, c -> c));
        List<PackageLock.Entry> entries = LOCK.entries(arch);
        assertEquals(entries.size(), debs.size());
        assertEquals(entries.size(), r.debianPackages());
        for (PackageLock.Entry e : entries) {
            Component c = debs.get(e.name());
            assertEquals(e.version(), c.getVersion(), e.name());
            assertEquals(1, c.getHashes().size());
            assertEquals("SHA-256", c.getHashes().get(0).getAlgorithm());
            assertEquals(e.sha256(), c.getHashes().get(0).getValue());
            com.github.packageurl.PackageURL purl = new com.github.packageurl.PackageURL(c.getPurl());
            assertEquals("deb", purl.getType());
            assertEquals("debian", purl.getNamespace());
            assertEquals(e.name(), purl.getName());
            assertEquals(e.version(), purl.getVersion(), "the epoch and + survive the purl's encoding");
            assertEquals(Map.of("arch", e.architecture()), purl.getQualifiers());
            assertEquals(e.role().id(), property(c, ImageSbom.ROLE).orElseThrow());
            assertEquals(e.suite(), property(c, ImageSbom.SUITE).orElseThrow());
            List<String> names = c.getLicenses() == null ? List.of()
                    : c.getLicenses().getLicenses().stream().map(License::getName).toList();
            assertEquals(DebianCopyright.licenses(SyntheticImages.copyright(e.name())), names, e.name());
        }
        assertTrue(debs.get("busybox-static").getLicenses() == null, "a free-form copyright names no licence");
        assertEquals(List.of("libc6-licence", "GPL-2+"), debs.get("libc6").getLicenses().getLicenses().stream()
                .map(License::getName).toList());

        List<Component> maven = bom.getComponents().stream()
                .filter(c -> property(c, ImageSbom.ECOSYSTEM).orElse("").equals("maven")).toList();
        assertEquals(1 + WorkerBoms.CLOSURE.size(), maven.size());
        assertEquals(maven.size(), r.mavenArtifacts());
        assertEquals("qvm-renderer-worker", maven.get(0).getName());
        assertEquals(OciConfig.WORKER_JAR, property(maven.get(0), "qvm:path").orElseThrow());
        for (String[] c : WorkerBoms.CLOSURE) {
            Component m = maven.stream().filter(x -> x.getName().equals(c[1])).findFirst().orElseThrow();
            assertEquals(c[0], m.getGroup());
            assertEquals(c[2], m.getVersion());
            assertEquals(c[3], m.getHashes().stream().filter(h -> h.getAlgorithm().equals("SHA-256")).findFirst()
                    .orElseThrow().getValue());
        }
        assertEquals(entries.size() + 1, bom.getDependencies().get(0).getDependencies().size(),
                "the image depends on every package and the worker");
    }

    @ParameterizedTest
    @EnumSource(Arch.class)
    void theSameImageGivesTheSameBytes(Arch arch) {
        assertEquals(ImageSbom.create(inputs(arch, false)).json(), ImageSbom.create(inputs(arch, false)).json());
    }

    @ParameterizedTest
    @EnumSource(Arch.class)
    void anImageNotBuiltFromTheLockIsRefused(Arch arch) {
        ImageSbom.Inputs good = inputs(arch, false);
        List<PackageLock.Entry> other = new ArrayList<>(good.packages());
        PackageLock.Entry first = other.remove(0);
        other.add(0, new PackageLock.Entry(first.name(), first.role(), first.suite(), first.version() + "+evil",
                first.architecture(), first.filename(), first.size(), first.sha256()));
        ImageSbom.Inputs bad = new ImageSbom.Inputs(arch, good.version(), good.manifest(), other, good.licenses(),
                good.worker());
        ReleaseException e = assertThrows(ReleaseException.class, () -> ImageSbom.create(bad));
        assertTrue(e.getMessage().contains(first.name() + " " + first.version() + "+evil")
                && e.getMessage().contains("not built from the lock"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(Arch.class)
    void aMavenArtifactWithoutItsSha256IsRefused(Arch arch) {
        ReleaseException e = assertThrows(ReleaseException.class, () -> ImageSbom.create(inputs(arch, true)));
        assertTrue(e.getMessage().contains("batik-transcoder@1.19") && e.getMessage().contains("without a SHA-256"),
                e.getMessage());
    }

    static Optional<String> property(Component c, String name) {
        return c.getProperties() == null ? Optional.empty() : c.getProperties().stream()
                .filter(p -> p.getName().equals(name)).map(org.cyclonedx.model.Property::getValue).findFirst();
    }
}
