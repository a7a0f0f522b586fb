package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.backend.QvmEnvironment;
import io.qvm.backend.image.ImageResolver;
import io.qvm.backend.image.LocalMavenRepository;
import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The orchestrator with the real lock, a synthetic image build and a scripted gate: a passing
 * release publishes the layout of rel-shared and installs the artifacts; every failure — a gate
 * step, a staged file changed after staging, a broken image, a build that is not reproducible, an
 * existing release, an install that fails — publishes nothing, leaves the Maven repository as it
 * was, removes the staging directory, and names the step with its evidence.
 */
@Tag("unit")
class ReleaseTest {

    static final PackageLock LOCK = PackageLock.bundled();
    static final String V = "1.2.3-test";

    @TempDir
    Path tmp;

    final List<String> progress = new CopyOnWriteArrayList<>();

    Path out() {
        return tmp.resolve("out");
    }

    Path repo() {
        return tmp.resolve("m2");
    }

    Release.Builder release(SyntheticImages images, ReleaseGate gate) throws IOException {
        Path jar = Files.write(tmp.resolve("renderer-worker.jar"), WorkerBoms.jar(WorkerBoms.bom(false)));
        return Release.builder().version(V).outDir(out()).mavenRepository(repo()).lock(LOCK).workerJar(jar)
                .images(images).cache(tmp.resolve("cache")).gate(gate).progress(progress::add).host("test host");
    }

    @Test
    void aReleaseThatPassesEveryStepIsPublishedAndInstalled() throws Exception {
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).build().run();

        assertTrue(r.ok(), () -> r.failure().toString());
        assertEquals(List.of("lock", "build:x86_64", "reproduce:x86_64", "build:aarch64", "reproduce:aarch64",
                "sbom:x86_64", "sbom:aarch64", "stage", "gate:x86_64:boot", "gate:x86_64:render", "gate:aarch64:boot",
                "gate:aarch64:render", "gate", "verify-staged", "publish", "maven-install", "report"),
                r.steps().stream().map(ReleaseStep::name).toList());
        assertEquals(4, images.builds(), "each architecture built twice");
        assertEquals(tmp.resolve("cache"), images.caches().get(0), "the first build uses the user's cache");
        assertFalse(images.caches().get(1).equals(tmp.resolve("cache")), "the second a fresh one");

        Path rel = out().resolve(V);
        assertEquals(rel, r.published().orElseThrow());
        for (Arch a : Release.ARCHS) {
            assertEquals(List.of("SHA256SUMS", "initramfs.cpio.gz", "manifest.json", "sbom.cdx.json", "vmlinuz"),
                    names(rel.resolve(a.id())));
            assertTrue(ImageDirectory.verify(rel.resolve(a.id()), a).ok());
        }
        assertEquals(List.of("SHA256SUMS", "aarch64", "release.json", "release.md", "x86_64"), names(rel));
        List<String> sums = Files.readAllLines(rel.resolve("SHA256SUMS"));
        assertEquals(12, sums.size(), "five files per architecture and the two reports: " + sums);
        assertTrue(sums.stream().anyMatch(l -> l.endsWith("  x86_64/sbom.cdx.json")), sums.toString());
        assertTrue(sums.stream().anyMatch(l -> l.endsWith("  release.json")), sums.toString());
        assertEquals(List.of(), Checksums.verify(rel), "the published release checks");
        assertEquals(List.of("out"), names(tmp).stream().filter(n -> n.startsWith("out")).toList());
        assertEquals(List.of(V), names(out()), "no staging directory left");

        for (Arch a : Release.ARCHS) {
            Path zip = MavenInstaller.path(repo(), V, a.id(), "zip");
            assertTrue(Files.isRegularFile(zip), zip.toString());
            assertEquals(-1, Files.mismatch(MavenInstaller.path(repo(), V, a.id(), "json"),
                    rel.resolve(a.id()).resolve("manifest.json")));
            assertFalse(Files.isSameFile(MavenInstaller.path(repo(), V, a.id(), "json"),
                    rel.resolve(a.id()).resolve("manifest.json")), "the repository's file is not the published one");
        }
        assertTrue(Files.isRegularFile(MavenInstaller.path(repo(), V, null, "pom")));
        assertEquals(5, r.mavenFiles().size(), r.mavenFiles().toString());
        for (Arch a : Release.ARCHS) {
            // The backend's resolver, with nothing anywhere else, finds exactly the released image in the repository.
            ImageResolver.Resolved found = ImageResolver.builder()
                    .environment(QvmEnvironment.of(Map.of("QVM_CACHE", tmp.resolve("user-cache").toString()),
                            tmp.resolve("home").toString(), "Linux"))
                    .mavenRepository(new LocalMavenRepository(repo(), "the test's")).version(V).build().resolve(a);
            assertEquals(ImageResolver.Source.MAVEN_REPOSITORY, found.source());
            for (String f : List.of("vmlinuz", "initramfs.cpio.gz", "manifest.json", "SHA256SUMS", "sbom.cdx.json")) {
                assertEquals(-1, Files.mismatch(found.dir().resolve(f), rel.resolve(a.id()).resolve(f)), f);
            }
        }

        JsonNode report = new ObjectMapper().readTree(rel.resolve("release.json").toFile());
        assertEquals("qvm.release/1", report.path("schema").asText());
        assertEquals(V, report.path("version").asText());
        assertTrue(report.path("ok").asBoolean());
        assertTrue(report.path("failedStep").isNull());
        assertEquals("scripted", report.path("gate").asText());
        JsonNode x86 = report.path("architectures").get(0);
        assertEquals("x86_64", x86.path("arch").asText());
        assertEquals("tcg", x86.path("accelerator").asText());
        assertEquals(1234, x86.path("readyMillis").asLong());
        assertEquals(3, x86.path("bootPhases").size());
        assertEquals(5, x86.path("files").size());
        assertEquals(LOCK.entries(Arch.X86_64).size(), x86.path("sbom").path("debianPackages").asInt());
        assertEquals(1 + WorkerBoms.CLOSURE.size(), x86.path("sbom").path("mavenArtifacts").asInt());
        String md = Files.readString(rel.resolve("release.md"));
        assertTrue(md.contains("**Published**") && md.contains("READY after 1234 ms") && md.contains("| verify-staged | yes"),
                md);
        assertTrue(progress.stream().anyMatch(l -> l.startsWith("ok gate ")), progress.toString());
    }

    @Test
    void aFailedGatePublishesNothingAndNamesTheStepWithItsEvidence() throws Exception {
        Release.Result r = release(new SyntheticImages(LOCK), new ScriptedGate("aarch64:boot", null)).build().run();

        assertFalse(r.ok());
        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("gate:aarch64:boot", failed.name(), "the gate's own step that failed is the release's");
        assertTrue(failed.evidence().contains("status 1 before READY") && failed.evidence().contains("console tail"),
                failed.evidence());
        ReleaseStep gate = r.steps().get(r.steps().size() - 1);
        assertEquals("gate", gate.name(), "the gate step, last, fails too: " + r.steps());
        assertFalse(gate.ok());
        assertTrue(gate.evidence().contains("failed at gate:aarch64:boot"), gate.evidence());
        assertTrue(r.steps().stream().anyMatch(s -> s.name().equals("gate:x86_64:render") && s.ok()));
        assertNothingPublished(r);
        String md = ReleaseReport.markdown(r, "test host");
        assertTrue(md.contains("**NOT published**") && md.contains("step `gate:aarch64:boot` failed"), md);
        assertEquals("gate:aarch64:boot", ReleaseReport.json(r, "h").path("failedStep").path("name").asText());
    }

    @Test
    void aStagedFileChangedAfterStagingFailsVerifyStagedAndPublishesNothing() throws Exception {
        ScriptedGate tampering = new ScriptedGate(null, staged -> {
            try {
                Path f = staged.dir(Arch.X86_64).resolve("initramfs.cpio.gz");
                byte[] b = Files.readAllBytes(f);
                b[b.length / 2] ^= 1;
                Files.write(f, b);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        Release.Result r = release(new SyntheticImages(LOCK), tampering).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("verify-staged", failed.name());
        assertTrue(failed.evidence().contains("checksum mismatch for x86_64/initramfs.cpio.gz: recorded sha256 "),
                failed.evidence());
        assertTrue(r.steps().stream().filter(s -> s.name().equals("gate")).allMatch(ReleaseStep::ok));
        assertNothingPublished(r);
    }

    @Test
    void aBrokenImageIsRefusedAtStagingAndNothingIsPublished() throws Exception {
        ScriptedGate gate = ScriptedGate.passing();
        Release.Result r = release(new SyntheticImages(LOCK).broken(Arch.AARCH64), gate).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("stage", failed.name());
        assertTrue(failed.evidence().contains("aarch64") && failed.evidence().contains("checksum mismatch")
                && failed.evidence().contains("vmlinuz"), failed.evidence());
        assertEquals(null, gate.seen(), "the gate never saw it");
        assertNothingPublished(r);
    }

    @Test
    void aBuildThatIsNotReproducibleNamesTheFileBothHashesAndTheEntry() throws Exception {
        Release.Result r = release(new SyntheticImages(LOCK).varying(Arch.X86_64), ScriptedGate.passing()).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("reproduce:x86_64", failed.name());
        assertTrue(failed.evidence().matches("(?s).*initramfs\\.cpio\\.gz differs: first build sha256 [0-9a-f]{64}, "
                + "second build sha256 [0-9a-f]{64}.*"), failed.evidence());
        assertTrue(failed.evidence().contains("etc/build-id"), "the entry that differs: " + failed.evidence());
        assertNothingPublished(r);
    }

    @Test
    void skippingReproducibilityBuildsOnceAndTheReportSaysSo() throws Exception {
        SyntheticImages images = new SyntheticImages(LOCK).varying(Arch.X86_64);
        Release.Result r = release(images, ScriptedGate.passing()).reproduce(false).archs(List.of(Arch.X86_64))
                .build().run();
        assertTrue(r.ok(), () -> r.failure().toString());
        assertEquals(1, images.builds());
        assertFalse(r.reproduced());
        assertTrue(Files.readString(out().resolve(V).resolve("release.md")).contains("NOT checked"));
    }

    @Test
    void anExistingReleaseDirectoryIsNeverOverwritten() throws Exception {
        Files.createDirectories(out().resolve(V));
        Files.writeString(out().resolve(V).resolve("keep"), "the earlier release");
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).build().run();

        assertEquals("lock", r.failure().orElseThrow().name());
        assertTrue(r.failure().get().evidence().contains("never overwritten"), r.failure().get().evidence());
        assertEquals(0, images.builds());
        assertEquals("the earlier release", Files.readString(out().resolve(V).resolve("keep")));
        assertEquals(List.of(V), names(out()));
    }

    @Test
    void aFailedInstallTakesThePublishedDirectoryBack() throws Exception {
        Files.createDirectories(tmp);
        Files.writeString(repo(), "a file where the repository should be");
        Release.Result r = release(new SyntheticImages(LOCK), ScriptedGate.passing()).build().run();

        assertEquals("maven-install", r.failure().orElseThrow().name());
        assertTrue(r.steps().stream().anyMatch(s -> s.name().equals("publish") && s.ok()));
        assertFalse(Files.exists(out().resolve(V)), "published, then removed");
        assertEquals(List.of(), names(out()));
        assertTrue(r.published().isEmpty());
    }

    @Test
    void aWorkerJarThatIsMissingStopsTheReleaseBeforeAnyBuild() throws Exception {
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).workerJar(tmp.resolve("none.jar")).build().run();
        assertEquals("lock", r.failure().orElseThrow().name());
        assertTrue(r.failure().get().evidence().contains("none.jar"));
        assertEquals(0, images.builds());
        assertNothingPublished(r);
    }

    private void assertNothingPublished(Release.Result r) throws IOException {
        assertFalse(r.ok());
        assertTrue(r.published().isEmpty());
        assertEquals(List.of(), r.mavenFiles());
        assertFalse(Files.exists(out().resolve(V)), "no release directory");
        if (Files.isDirectory(out())) {
            assertEquals(List.of(), names(out()), "no staging directory left either");
        }
        assertFalse(Files.exists(repo()), "the Maven repository is untouched");
        String name = r.failure().orElseThrow().name();
        assertTrue(progress.stream().anyMatch(l -> l.startsWith("FAILED ") && l.contains(name)), progress.toString());
    }

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
