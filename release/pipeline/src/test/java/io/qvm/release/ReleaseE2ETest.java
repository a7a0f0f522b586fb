package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.SandboxConfig;
import io.qvm.image.ImageInfo;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The release pipeline with the product's gate ({@link HostGate}), booting real QEMU: a good
 * image is built twice and compared, passes the gate and is published and installed; an image
 * whose worker never answers fails the gate at its boot and nothing is published or installed.
 * The suite releases the host's architecture only (the aarch64 image's gate — a boot under TCG
 * with {@code qemu-system-aarch64}, the handshake, one SVG and one PDF — is what {@code ./qvm
 * release} adds, some four minutes more here), with the gate's short suite and without its clones
 * step ({@link HostGate.Options#quick()}): the image is the checkout's, whose hostile corpus and
 * clones {@code HostileCorpusE2ETest}, {@code RenderCorpusE2ETest} and {@code CloneE2ETest} prove
 * (the full gate took some three and a half minutes more here), and without the class archive
 * (adr/0018), which a real release's gate makes in its boot.
 */
@Tag("e2e")
@Tag("qemu")
class ReleaseE2ETest {

    private static final Arch HOST = Arch.fromOsArch(System.getProperty("os.arch")).orElseThrow();

    @TempDir
    Path tmp;

    @Test
    void aGoodImagePassesTheGateAndIsPublishedAndInstalled() throws IOException {
        Path out = tmp.resolve("out");
        Path repo = tmp.resolve("repo");
        Release.Result r = Release.builder().archs(List.of(HOST)).outDir(out).mavenRepository(repo)
                .gate(new HostGate(quickWithoutArchive())).progress(ReleaseE2ETest::log).build().run();
        String md = ReleaseReport.markdown(r, "test host");
        System.out.println(md);
        assertTrue(r.ok(), md);
        for (String step : List.of("lock", "build:" + HOST.id(), "reproduce:" + HOST.id(), "sbom:" + HOST.id(),
                "gate:" + HOST.id() + ":boot", "gate:" + HOST.id() + ":handshake",
                "gate:" + HOST.id() + ":render-svg", "gate:" + HOST.id() + ":render-pdf",
                "gate:" + HOST.id() + ":nothing-left", "verify-staged", "publish", "maven-install")) {
            assertTrue(r.steps().stream().anyMatch(s -> s.name().equals(step) && s.ok()), step + " in " + md);
        }
        assertTrue(r.steps().stream().noneMatch(s -> s.name().endsWith(":clones")), "the quick gate has no clones step");
        Path published = out.resolve(r.version());
        for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS", "sbom.cdx.json")) {
            assertTrue(Files.isRegularFile(published.resolve(HOST.id()).resolve(f)), f);
        }
        for (String f : List.of("SHA256SUMS", "release.json", "release.md")) {
            assertTrue(Files.isRegularFile(published.resolve(f)), f);
        }
        Path installed = repo.resolve("io/qvm/qvm-image").resolve(r.version());
        String base = "qvm-image-" + r.version();
        for (String f : List.of(base + ".pom", base + "-" + HOST.id() + ".zip", base + "-" + HOST.id() + ".json")) {
            assertTrue(Files.isRegularFile(installed.resolve(f)), f);
        }
        assertEquals(List.of(r.version()), names(out), "nothing but the release in " + out);
    }

    @Test
    void anImageWhoseWorkerNeverAnswersFailsTheGateAndNothingIsPublished() throws IOException {
        Path out = tmp.resolve("out");
        Path repo = tmp.resolve("repo");
        Path silent = SilentWorker.jar(ImageInfo.repoRoot().resolve("renderer-worker/target/renderer-worker.jar"),
                tmp.resolve("silent-worker.jar"));
        HostGate.Options d = HostGate.Options.defaults();
        // A worker that never answers would also never finish the warm-up that lists its classes:
        // no class archive, so the boot deadline is the gate's and nothing else's. 45 s: the silent
        // worker's JVM printed its line within a 25 s deadline here (tried once, 2026-12-06); the test
        // asserts that the line came, so a deadline that ends the boot before the worker fails it.
        HostGate.Options quick = new HostGate.Options(() -> d.backends().get().classArchives(false),
                SandboxConfig.builder().bootTimeout(Duration.ofSeconds(45)).build(), d.crossConfig(), d.stopTimeout(),
                d.fullSuite(), d.runtimeRoot(), false);
        Release.Result r = Release.builder().archs(List.of(HOST)).reproduce(false).install(false).workerJar(silent).outDir(out)
                .mavenRepository(repo).gate(new HostGate(quick)).progress(ReleaseE2ETest::log).build().run();
        String md = ReleaseReport.markdown(r, "test host");
        System.out.println(md);
        assertFalse(r.ok(), md);
        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("gate:" + HOST.id() + ":boot", failed.name(), md);
        assertTrue(failed.evidence().contains("no answer within the boot deadline"), "the boot deadline, not another failure: "
                + failed.evidence());
        assertTrue(failed.evidence().contains("silent worker: reading nothing"),
                "the silent worker started and said so on the console: " + failed.evidence());
        assertFalse(r.steps().stream().anyMatch(s -> s.name().equals("publish")), "no publish step ran: " + md);
        assertEquals(List.of(), names(out), "nothing published, no staging left in " + out);
        assertFalse(Files.exists(repo.resolve("io/qvm/qvm-image")), "nothing installed");
    }

    /**
     * The gate's short suite without clones, and without the class archive, whose make would add
     * half a minute to its boot in every run (SandboxLifecycleE2ETest proves the archive; a real
     * release's gate makes it).
     */
    private static HostGate.Options quickWithoutArchive() {
        HostGate.Options q = HostGate.Options.defaults().quick();
        return q.withBackends(() -> q.backends().get().classArchives(false));
    }

    private static List<String> names(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static void log(String line) {
        System.out.println("[release " + LocalTime.now().withNano(0) + "] " + line);
        System.out.flush();
    }
}
