package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.image.ImageResolver;
import io.qvm.internal.image.ImageSignature;
import io.qvm.internal.image.TestKeys;
import io.qvm.internal.image.LocalMavenRepository;
import io.qvm.internal.image.LoopbackMavenRepository;
import io.qvm.internal.image.PinnedImages;
import io.qvm.internal.image.TestResolvers;
import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.Sha256;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The orchestrator with the real lock, a synthetic image build and a scripted gate: a passing
 * release publishes the layout of rel-shared and installs the artifacts; every failure — a gate
 * step or a gate that did not boot an architecture, a staged file changed after staging (with the
 * sums files rewritten to match, too), a broken image, a build that is not reproducible, an
 * existing release directory or installed release, an install that fails partway, an {@link Error}
 * after publish — publishes nothing, leaves the Maven repository as it was, removes the staging
 * directory, and names the step with its evidence.
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
        Path reactor = tmp.resolve("reactor");
        if (!Files.exists(reactor)) {
            Reactors.write(reactor, V);
        }
        return Release.builder().version(V).outDir(out()).mavenRepository(repo()).lock(LOCK).workerJar(jar)
                .reactor(reactor)
                .images(images).cache(tmp.resolve("cache")).gate(gate).progress(progress::add).host("test host");
    }

    @Test
    void aReleaseThatPassesEveryStepIsPublishedAndInstalled() throws Exception {
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).build().run();

        assertTrue(r.ok(), () -> r.failure().toString());
        assertEquals(List.of("lock", "build:x86_64", "reproduce:x86_64", "build:aarch64", "reproduce:aarch64",
                "sbom:x86_64", "sbom:aarch64", "stage", "gate:x86_64:boot", "gate:x86_64:render", "gate:aarch64:boot",
                "gate:aarch64:render", "gate", "verify-staged", "publish", "maven-install", "pins", "report"),
                r.steps().stream().map(ReleaseStep::name).toList());
        assertEquals(4, images.builds(), "each architecture built twice");
        assertFalse(images.caches().contains(tmp.resolve("cache")), "every build from a fresh cache: "
                + images.caches());
        assertEquals(4, images.caches().stream().distinct().count(), "each its own: " + images.caches());

        Path rel = out().resolve(V);
        assertEquals(rel, r.published().orElseThrow());
        for (Arch a : Release.ARCHS) {
            assertEquals(List.of("SHA256SUMS", "initramfs.cpio.lz4", "manifest.json", "sbom.cdx.json", "vmlinuz"),
                    names(rel.resolve(a.id())));
            assertTrue(ImageDirectory.verify(rel.resolve(a.id()), a).ok());
        }
        assertEquals(List.of("SHA256SUMS", "aarch64", "pinned-images.properties", "release.json", "release.md", "x86_64"),
                names(rel));
        List<String> sums = Files.readAllLines(rel.resolve("SHA256SUMS"));
        assertEquals(13, sums.size(), "five files per architecture, the two reports and the pins: " + sums);
        PinnedImages pins = PinnedImages.parse(Files.readString(rel.resolve(PinnedImages.FILE)), "the release's");
        assertEquals(V, pins.version());
        for (Arch a : Release.ARCHS) {
            Path zip = MavenInstaller.path(repo(), V, a.id(), "zip");
            assertEquals(new PinnedImages.Pin(Sha256.of(zip), Files.size(zip)), pins.pins().get(a),
                    "the pins are the installed zip's");
        }
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
        assertEquals(5 + 2 + 4 * Reactors.LIBRARIES.size(), r.mavenFiles().size(), "the image's POM, zips and "
                + "manifests; the parent's and the BOM's POM; per library its POM and three jars: " + r.mavenFiles());
        for (String lib : Reactors.LIBRARIES) {
            for (String c : List.of("", "-sources", "-javadoc")) {
                String name = lib + "-" + V + c + ".jar";
                Path installed = repo().resolve("io/qvm/" + lib + "/" + V + "/" + name);
                assertEquals("the jar " + name, Files.readString(installed), installed.toString());
                assertTrue(r.mavenFiles().contains(installed), r.mavenFiles().toString());
            }
            assertTrue(Files.isRegularFile(repo().resolve("io/qvm/" + lib + "/" + V + "/" + lib + "-" + V + ".pom")));
        }
        for (String pom : List.of("qvm-parent", "qvm-bom")) {
            assertTrue(Files.isRegularFile(repo().resolve("io/qvm/" + pom + "/" + V + "/" + pom + "-" + V + ".pom")), pom);
        }
        for (Arch a : Release.ARCHS) {
            // The backend's resolver, with nothing anywhere else, finds exactly the released image in the repository.
            ImageResolver.Resolved found = ImageResolver.builder()
                    .environment(QvmEnvironment.of(Map.of("QVM_CACHE", tmp.resolve("user-cache").toString()),
                            tmp.resolve("home").toString(), "Linux"))
                    .mavenRepository(new LocalMavenRepository(repo(), "the test's")).version(V).build().resolve(a);
            assertEquals(ImageResolver.Source.MAVEN_REPOSITORY, found.source());
            for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS", "sbom.cdx.json")) {
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

    /**
     * A gate that changes a staged file publishes nothing — also when it rewrites the image's
     * {@code SHA256SUMS}, its manifest and the release's {@code SHA256SUMS} to match, so that every
     * file on disk agrees with every other: {@code verify-staged} checks against the sums recorded
     * at staging, not against files the gate could rewrite.
     */
    @ParameterizedTest(name = "rewriting the sums files too: {0}")
    @ValueSource(booleans = {false, true})
    void aStagedFileChangedAfterStagingFailsVerifyStagedAndPublishesNothing(boolean rewriteSums) throws Exception {
        ScriptedGate tampering = new ScriptedGate(null, staged -> {
            try {
                Path dir = staged.dir(Arch.X86_64);
                Path f = dir.resolve("vmlinuz");
                byte[] b = Files.readAllBytes(f);
                b[b.length / 2] ^= 1;
                Files.write(f, b);
                if (rewriteSums) {
                    rewriteSums(staged, Arch.X86_64, "vmlinuz");
                    assertTrue(ImageDirectory.verify(dir, Arch.X86_64).ok(), "the image directory agrees with itself");
                    assertEquals(List.of(), Checksums.verify(staged.root()), "so does the release's SHA256SUMS");
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        Release.Result r = release(new SyntheticImages(LOCK), tampering).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("verify-staged", failed.name());
        assertTrue(failed.evidence().contains("checksum mismatch for x86_64/vmlinuz: recorded sha256 "),
                failed.evidence());
        if (rewriteSums) {
            for (String f : List.of("x86_64/SHA256SUMS", "x86_64/manifest.json", "SHA256SUMS")) {
                assertTrue(failed.evidence().contains("checksum mismatch for " + f + ": recorded sha256 "),
                        f + " in " + failed.evidence());
            }
        }
        assertTrue(r.steps().stream().filter(s -> s.name().equals("gate")).allMatch(ReleaseStep::ok));
        assertNothingPublished(r);
    }

    /**
     * A published file changed between {@code verify-staged} and the install (here by the progress
     * callback as the install starts) is not installed: the zip's entries and the manifest copy are
     * checked against the sums recorded at staging first.
     */
    @Test
    void aPublishedFileChangedBeforeTheInstallIsNotInstalled() throws Exception {
        Release.Result r = release(new SyntheticImages(LOCK), ScriptedGate.passing()).progress(line -> {
            progress.add(line);
            if (line.equals("maven-install …")) {
                try {
                    Path f = out().resolve(V).resolve("aarch64").resolve("initramfs.cpio.lz4");
                    byte[] b = Files.readAllBytes(f);
                    b[b.length / 2] ^= 1;
                    Files.write(f, b);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        }).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("maven-install", failed.name());
        assertTrue(failed.evidence().contains("qvm-image-" + V + "-aarch64.zip: checksum mismatch for "
                + "initramfs.cpio.lz4: recorded sha256 "), failed.evidence());
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
        assertTrue(failed.evidence().matches("(?s).*initramfs\\.cpio\\.lz4 differs: first build sha256 [0-9a-f]{64}, "
                + "second build sha256 [0-9a-f]{64}.*"), failed.evidence());
        assertTrue(failed.evidence().contains("etc/build-id"), "the entry that differs: " + failed.evidence());
        assertNothingPublished(r);
    }

    @Test
    void skippingReproducibilityBuildsOnceAndTheReportSaysSo() throws Exception {
        SyntheticImages images = new SyntheticImages(LOCK).varying(Arch.X86_64);
        Release.Result r = release(images, ScriptedGate.passing()).reproduce(false).install(false)
                .archs(List.of(Arch.X86_64)).build().run();
        assertTrue(r.ok(), () -> r.failure().toString());
        assertEquals(1, images.builds());
        assertFalse(r.reproduced());
        String md = Files.readString(out().resolve(V).resolve("release.md"));
        assertTrue(md.contains("NOT checked") && md.contains("NOT installed"), md);
        assertFalse(r.steps().stream().anyMatch(s -> s.name().equals("maven-install")));
        assertFalse(Files.exists(repo()), "nothing installed");
    }

    /** Installing an image that was built once would put an unproven image where the backend finds it. */
    @Test
    void aReleaseThatSkipsTheReproduceStepIsRefusedIfItWouldInstall() throws Exception {
        SyntheticImages images = new SyntheticImages(LOCK);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> release(images, ScriptedGate.passing()).reproduce(false).build());
        assertTrue(e.getMessage().contains("skips the reproduce step") && e.getMessage().contains("--no-install"),
                e.getMessage());
        assertEquals(0, images.builds());
    }

    /**
     * A package tree in the user's cache that changed after it was extracted (here: its copyright
     * file names another licence) does not reach a release: the release's builds and its SBOM use
     * trees extracted again from the verified .debs, also without the reproduce step.
     */
    @Test
    void aChangedTreeInTheUsersCacheNeverReachesARelease() throws Exception {
        PackageLock.Entry fonts = LOCK.one(Arch.X86_64, PackageLock.Role.FONTS);
        Path doc = tmp.resolve("cache/extracted").resolve(fonts.sha256()).resolve("usr/share/doc").resolve(fonts.name());
        Files.createDirectories(doc);
        Files.writeString(doc.resolve("copyright"), SyntheticImages.copyright(fonts.name())
                .replace(fonts.name() + "-licence", "TAMPERED-licence"));
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).reproduce(false).install(false)
                .archs(List.of(Arch.X86_64)).build().run();

        assertTrue(r.ok(), () -> r.failure().toString());
        assertFalse(images.caches().contains(tmp.resolve("cache")), images.caches().toString());
        String sbom = Files.readString(out().resolve(V).resolve("x86_64").resolve("sbom.cdx.json"));
        assertFalse(sbom.contains("TAMPERED"), "the SBOM read the user's changed tree");
        assertTrue(sbom.contains(fonts.name() + "-licence"), "the SBOM read the freshly extracted tree");
    }

    /**
     * A signed release: each image's SHA256SUMS and the release's carry a detached signature by the
     * release key, and the image the backend then resolves from the Maven repository passes the
     * backend's signature check with the public key (and fails it with another key's).
     */
    @Test
    void aSignedReleaseCarriesSignaturesTheBackendAccepts() throws Exception {
        TestKeys.Key key = TestKeys.generate("qvm release <release@qvm.test>", "s3cret");
        Path secret = key.writeSecret(tmp.resolve("release.key.asc"));
        Path pub = key.writePublic(tmp.resolve("release.pub.asc"));
        ReleaseSigner signer = ReleaseSigner.load(secret, "s3cret".toCharArray());
        Release.Result r = release(new SyntheticImages(LOCK), ScriptedGate.passing()).archs(List.of(Arch.X86_64))
                .signer(signer).build().run();
        assertTrue(r.ok(), () -> r.failure().toString());

        Path rel = out().resolve(V);
        assertTrue(Files.isRegularFile(rel.resolve("x86_64").resolve(ImageSignature.FILE)));
        assertTrue(Files.isRegularFile(rel.resolve(ImageSignature.FILE)), "the release's SHA256SUMS is signed too");
        ImageSignature backend = ImageSignature.trusting(pub);
        ImageResolver.Resolved found = ImageResolver.builder()
                .environment(QvmEnvironment.of(Map.of("QVM_CACHE", tmp.resolve("user-cache").toString()),
                        tmp.resolve("home").toString(), "Linux"))
                .mavenRepository(new LocalMavenRepository(repo(), "the test's")).version(V).build().resolve(Arch.X86_64);
        assertTrue(Files.isRegularFile(found.dir().resolve(ImageSignature.FILE)), "the zip carries the signature");
        backend.check(found.image());
        Path otherKey = TestKeys.generate("other <o@qvm.test>", "x").writePublic(tmp.resolve("other.pub.asc"));
        assertThrows(io.qvm.HostSetupException.class, () -> ImageSignature.trusting(otherKey).check(found.image()));
        // the release's own SHA256SUMS: the same check over the top-level directory's sums
        backend.check(new io.qvm.internal.image.GuestImage(Arch.X86_64, rel, found.image().manifest(), Map.of()));
        assertTrue(r.steps().stream().anyMatch(s -> s.name().equals("stage") && s.evidence().contains(signer.fingerprint())),
                r.steps().toString());
    }

    /**
     * The whole path a server takes without building anything: a signed release deployed to a
     * repository on loopback, then a backend that carries the release's pins fetches the image from
     * there, and it is byte for byte the published one and passes the signature check.
     */
    @Test
    void aDeployedReleaseIsFetchedByABackendThatPinsIt() throws Exception {
        TestKeys.Key key = TestKeys.generate("qvm release <release@qvm.test>", "s3cret");
        ReleaseSigner signer = ReleaseSigner.load(key.writeSecret(tmp.resolve("release.key.asc")), "s3cret".toCharArray());
        Path settings = Files.writeString(tmp.resolve("settings.xml"), "<settings><servers><server><id>rel</id>"
                + "<username>deployer</username><password>${env.DEPLOY_PW}</password></server></servers></settings>");
        try (LoopbackMavenRepository remote = new LoopbackMavenRepository(tmp.resolve("served"))
                .credentials("deployer", "pw-4-deploy")) {
            MavenDeployer.Target target = MavenDeployer.target(remote.url().toString(), "rel", settings, false,
                    QvmEnvironment.of(Map.of("DEPLOY_PW", "pw-4-deploy"), tmp.toString(), "Linux"));
            Release.Result r = release(new SyntheticImages(LOCK), ScriptedGate.passing()).archs(List.of(Arch.X86_64))
                    .signer(signer).deploy(target).build().run();
            assertTrue(r.ok(), () -> r.failure().toString());
            assertEquals(List.of("publish", "maven-install", "pins", "report", "deploy"), r.steps().stream()
                    .map(ReleaseStep::name).toList().subList(r.steps().size() - 5, r.steps().size()),
                    "the deploy, the one step that cannot be taken back, is the last");
            Path rel = out().resolve(V);
            Path served = remote.root().resolve("io/qvm/qvm-image/" + V + "/qvm-image-" + V + "-x86_64.zip");
            assertEquals(-1, Files.mismatch(served, MavenInstaller.path(repo(), V, "x86_64", "zip")),
                    "the repository serves exactly what was installed");
            assertTrue(Files.isRegularFile(served.resolveSibling(served.getFileName() + ".asc")));
            for (String f : List.of("qvm-qemu-backend/" + V + "/qvm-qemu-backend-" + V + ".jar",
                    "qvm-qemu-backend/" + V + "/qvm-qemu-backend-" + V + "-javadoc.jar",
                    "qvm-protocol/" + V + "/qvm-protocol-" + V + "-sources.jar",
                    "qvm-bom/" + V + "/qvm-bom-" + V + ".pom", "qvm-parent/" + V + "/qvm-parent-" + V + ".pom")) {
                Path lib = remote.root().resolve("io/qvm/" + f);
                assertTrue(Files.isRegularFile(lib), "the libraries are deployed with the images: " + f);
                assertTrue(MavenDeployerTest.verifies(lib.resolveSibling(lib.getFileName() + ".asc"), lib, key),
                        f + ".asc is the release key's signature of it");
                assertTrue(Files.isRegularFile(lib.resolveSibling(lib.getFileName() + ".sha1")), f);
                Path installed = repo().resolve("io/qvm/" + f);
                assertEquals(-1, Files.mismatch(installed, lib), "the repository serves what was installed: " + f);
                assertTrue(MavenDeployerTest.verifies(installed.resolveSibling(lib.getFileName() + ".asc"), installed,
                        key), "installed with its signature too: " + f);
            }

            PinnedImages pins = PinnedImages.parse(Files.readString(rel.resolve(PinnedImages.FILE)), "the release's");
            ImageResolver.Resolved found = TestResolvers.pinned(ImageResolver.builder()
                    .environment(QvmEnvironment.of(Map.of("QVM_CACHE", tmp.resolve("server-cache").toString(),
                            "QVM_IMAGE_REPOSITORY", remote.url().toString()), tmp.resolve("server").toString(), "Linux"))
                    .mavenRepository(new LocalMavenRepository(tmp.resolve("server-m2"), "the server's")).version(V),
                    pins).build().resolve(Arch.X86_64);
            assertEquals(ImageResolver.Source.REMOTE_REPOSITORY, found.source());
            for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS", "sbom.cdx.json")) {
                assertEquals(-1, Files.mismatch(found.dir().resolve(f), rel.resolve("x86_64").resolve(f)), f);
            }
            ImageSignature.trusting(key.writePublic(tmp.resolve("release.pub.asc"))).check(found.image());
        }
    }

    @Test
    void aFailedDeployTakesTheLocalReleaseBackAndSaysWhatToDo() throws Exception {
        try (LoopbackMavenRepository remote = new LoopbackMavenRepository(tmp.resolve("served"))
                .credentials("deployer", "right")) {
            MavenDeployer.Target target = MavenDeployer.target(remote.url().toString(), "rel", null, false,
                    QvmEnvironment.of(Map.of(), tmp.resolve("home").toString(), "Linux"));
            Release.Result r = release(new SyntheticImages(LOCK), ScriptedGate.passing()).archs(List.of(Arch.X86_64))
                    .deploy(target).build().run();
            assertFalse(r.ok());
            ReleaseStep failed = r.failure().orElseThrow();
            assertEquals("deploy", failed.name());
            assertTrue(failed.evidence().contains("answered HTTP 401 (unauthorized) as an anonymous user"),
                    failed.evidence());
            assertNothingPublished(r);
        }
    }

    @Test
    void aReleaseThatSkipsTheReproduceStepIsNeverDeployed() throws Exception {
        MavenDeployer.Target target = MavenDeployer.target("https://repo.example/r", "rel", null, false,
                QvmEnvironment.of(Map.of(), tmp.resolve("home").toString(), "Linux"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> release(new SyntheticImages(LOCK),
                ScriptedGate.passing()).reproduce(false).install(false).deploy(target).build());
        assertTrue(e.getMessage().startsWith("a release that skips the reproduce step is never deployed"), e.getMessage());
    }

    @Test
    void aReleaseThatSkipsTheReproduceStepIsNeverSigned() throws Exception {
        TestKeys.Key key = TestKeys.generate("qvm release <release@qvm.test>", "");
        ReleaseSigner signer = ReleaseSigner.load(key.writeSecret(tmp.resolve("k.asc")), new char[0]);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> release(new SyntheticImages(LOCK), ScriptedGate.passing()).reproduce(false).install(false)
                        .signer(signer).build());
        assertTrue(e.getMessage().contains("never signed"), e.getMessage());
    }

    @Test
    void aWrongPassphraseOrNoKeyIsRefusedSayingWhy() throws Exception {
        TestKeys.Key key = TestKeys.generate("qvm release <release@qvm.test>", "right");
        Path secret = key.writeSecret(tmp.resolve("k.asc"));
        IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                () -> ReleaseSigner.load(secret, "wrong".toCharArray()));
        assertTrue(wrong.getMessage().contains("passphrase does not unlock"), wrong.getMessage());
        Path pubOnly = key.writePublic(tmp.resolve("pub.asc"));
        IllegalArgumentException notSecret = assertThrows(IllegalArgumentException.class,
                () -> ReleaseSigner.load(pubOnly, new char[0]));
        assertTrue(notSecret.getMessage().contains("secret key"), notSecret.getMessage());
    }

    /** A step that throws says what failed, its causes included, never a bare type or "null". */
    @Test
    void aFailedStepSaysWhatFailedWithItsCauses() {
        assertEquals("cannot read x: disk; caused by java.io.IOException: the disk is gone",
                Release.whatFailed(new ReleaseException("cannot read x: disk",
                        new java.io.IOException("the disk is gone"))));
        assertEquals("java.lang.IllegalStateException; caused by java.io.IOException: why",
                Release.whatFailed(new IllegalStateException((String) null, new java.io.IOException("why"))));
        assertEquals("java.io.UncheckedIOException: java.io.IOException: gone",
                Release.whatFailed(new java.io.UncheckedIOException(new java.io.IOException("gone"))));
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

    /**
     * Resolver failing partway — on the last artifact (so the POM, three artifacts and
     * {@code _remote.repositories} are already written), or on the artifact's
     * {@code maven-metadata-local.xml} (every artifact written) — leaves the repository exactly as
     * it was: what the install created is deleted, and the version directory with it when it did not
     * exist before.
     */
    @ParameterizedTest(name = "a directory in the way at {0}")
    @ValueSource(strings = {"qvm-image/VERSION/qvm-image-VERSION-aarch64.json", "qvm-image/maven-metadata-local.xml",
            "qvm-qemu-backend/maven-metadata-local.xml"})
    void anInstallThatFailsPartwayLeavesTheRepositoryAsItWas(String collision) throws Exception {
        Path groupDir = repo().resolve("io/qvm");
        Files.createDirectories(groupDir.resolve(collision.replace("VERSION", V)).resolve("in the way"));
        Map<String, String> before = tree(repo());
        Release.Result r = release(new SyntheticImages(LOCK), ScriptedGate.passing()).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("maven-install", failed.name());
        assertTrue(failed.evidence().contains("Maven Resolver could not install"), failed.evidence());
        assertEquals(before, tree(repo()), "the repository as it was (Resolver's .locks aside)");
        assertEquals(List.of(), r.mavenFiles());
        assertFalse(Files.exists(out().resolve(V)), "published, then removed");
        assertEquals(List.of(), names(out()));
    }

    @Test
    void anInstalledReleaseIsNeverOverwritten() throws Exception {
        Path pom = MavenInstaller.path(repo(), V, null, "pom");
        Files.createDirectories(pom.getParent());
        Files.writeString(pom, "the earlier release's POM");
        Map<String, String> before = tree(repo());
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("lock", failed.name());
        assertTrue(failed.evidence().contains(pom.getParent() + " holds io.qvm:qvm-image:" + V + " already")
                && failed.evidence().contains("never overwritten") && failed.evidence().contains("another --version"),
                failed.evidence());
        assertEquals(0, images.builds());
        assertEquals(before, tree(repo()));
        assertFalse(Files.exists(out().resolve(V)));
    }

    @Test
    void aReleasedLibraryIsNeverOverwrittenEither() throws Exception {
        Path jar = repo().resolve("io/qvm/qvm-protocol/" + V + "/qvm-protocol-" + V + "-javadoc.jar");
        Files.createDirectories(jar.getParent());
        Files.writeString(jar, "the earlier release's javadoc");
        Map<String, String> before = tree(repo());
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("lock", failed.name());
        assertTrue(failed.evidence().contains("holds qvm-protocol-" + V + "-javadoc.jar already")
                && failed.evidence().contains("never overwritten"), failed.evidence());
        assertEquals(0, images.builds());
        assertEquals(before, tree(repo()));
    }

    /**
     * Library jars built at another version (the project was not set to the release's), or missing,
     * stop the release at lock, before any image is built, with every problem and the command.
     */
    @Test
    void librariesNotBuiltAtTheReleasesVersionStopItBeforeAnythingIsBuilt() throws Exception {
        Path reactor = Reactors.write(tmp.resolve("reactor"), V, "0.9.0-SNAPSHOT");
        Files.delete(reactor.resolve("protocol/pom.xml").resolveSibling("target")
                .resolve("qvm-protocol-0.9.0-SNAPSHOT-javadoc.jar"));
        SyntheticImages images = new SyntheticImages(LOCK);
        Release.Result r = release(images, ScriptedGate.passing()).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("lock", failed.name());
        String e = failed.evidence();
        for (String lib : Reactors.LIBRARIES) {
            for (String c : List.of("", "-sources", "-javadoc")) {
                assertTrue(e.contains(lib + "-" + V + c + ".jar"), "names every jar missing: " + e);
            }
        }
        assertTrue(e.contains("mvn versions:set -DnewVersion=" + V + " -DprocessAllModules"), e);
        assertTrue(e.contains("mvn -DskipTests verify"), e);
        assertEquals(0, images.builds());
        assertFalse(Files.exists(repo()), "nothing installed");
        assertFalse(Files.exists(out().resolve(V)), "nothing published");
    }

    /**
     * A SNAPSHOT may be released again: it replaces the installed one, and a release that fails
     * after its install (here the report: {@code release.json} cannot be written) puts the previous
     * snapshot's files back, Resolver's metadata included.
     */
    @Test
    void aSnapshotIsReplacedAndRestoredWhenTheReleaseFailsAfterItsInstall() throws Exception {
        String snapshot = "1.2.3-SNAPSHOT";
        Reactors.write(tmp.resolve("reactor"), snapshot);
        Release.Result first = release(new SyntheticImages(LOCK), ScriptedGate.passing()).version(snapshot).build().run();
        assertTrue(first.ok(), () -> first.failure().toString());
        FileTrees.delete(out().resolve(snapshot));
        Path zip = MavenInstaller.path(repo(), snapshot, "x86_64", "zip");
        Files.writeString(zip, "the earlier snapshot's zip");
        Path jar = repo().resolve("io/qvm/qvm-protocol/" + snapshot + "/qvm-protocol-" + snapshot + ".jar");
        Files.writeString(jar, "the earlier snapshot's jar");
        Map<String, String> before = tree(repo());

        Release.Result failing = release(new SyntheticImages(LOCK), ScriptedGate.passing()).version(snapshot)
                .progress(line -> {
                    progress.add(line);
                    if (line.equals("report …")) {
                        try {
                            Files.createDirectories(out().resolve(snapshot).resolve("release.json"));
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    }
                }).build().run();
        assertEquals("report", failing.failure().orElseThrow().name());
        assertTrue(failing.steps().stream().anyMatch(s -> s.name().equals("maven-install") && s.ok()));
        assertEquals(before, tree(repo()), "the earlier snapshot, as it was");
        assertEquals("the earlier snapshot's jar", Files.readString(jar), "the libraries too");
        assertFalse(Files.exists(out().resolve(snapshot)));

        Release.Result again = release(new SyntheticImages(LOCK), ScriptedGate.passing()).version(snapshot).build().run();
        assertTrue(again.ok(), () -> again.failure().toString());
        Map<String, String> zipped = ImageZipWriter.sha256(zip);
        for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS", "sbom.cdx.json")) {
            assertEquals(Sha256.of(out().resolve(snapshot).resolve("x86_64").resolve(f)), zipped.get(f), f);
        }
        assertTrue(again.steps().get(0).evidence().contains("replaces the installed " + snapshot),
                again.steps().get(0).evidence());
    }

    /**
     * An {@link Error} (or any throwable) after publish — here from the progress callback as the
     * install starts — still takes the release back before it propagates.
     */
    @Test
    void anErrorAfterPublishTakesTheReleaseBackAndPropagates() throws Exception {
        Release release = release(new SyntheticImages(LOCK), ScriptedGate.passing()).progress(line -> {
            progress.add(line);
            if (line.equals("maven-install …")) {
                throw new NoClassDefFoundError("io/qvm/Missing");
            }
        }).build();

        NoClassDefFoundError e = assertThrows(NoClassDefFoundError.class, release::run);
        assertEquals("io/qvm/Missing", e.getMessage());
        assertTrue(progress.stream().anyMatch(l -> l.startsWith("ok publish")), progress.toString());
        assertFalse(Files.exists(out().resolve(V)), "published, then removed");
        assertEquals(List.of(), names(out()), "no staging directory left");
        assertFalse(Files.exists(repo()));
    }

    /** A gate whose result has no passed {@code <arch>:boot} for a staged architecture fails the gate step. */
    @Test
    void aGateThatDidNotBootEveryArchitectureFailsTheGateStep() throws Exception {
        ReleaseGate x86Only = new ReleaseGate() {
            @Override
            public String name() {
                return "lazy";
            }

            @Override
            public GateResult run(StagedImages images, java.util.function.Consumer<String> p) {
                return new GateResult(name(), List.of(ReleaseStep.passed("x86_64:boot", 1, "READY"),
                        ReleaseStep.passed("aarch64:render", 1, "rendered, without a boot")), List.of());
            }
        };
        Release.Result r = release(new SyntheticImages(LOCK), x86Only).build().run();

        ReleaseStep failed = r.failure().orElseThrow();
        assertEquals("gate", failed.name());
        assertTrue(failed.evidence().contains("the lazy gate did not boot aarch64 (no passed gate:aarch64:boot step)"),
                failed.evidence());
        assertNothingPublished(r);
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

    /**
     * What a gate would have to do to hide a changed {@code file} of {@code arch}: the image's
     * {@code SHA256SUMS} and manifest, and the release's {@code SHA256SUMS}, rewritten to match.
     */
    private static void rewriteSums(StagedImages staged, Arch arch, String file) throws IOException {
        Path dir = staged.dir(arch);
        String sha256 = Sha256.of(dir.resolve(file));
        ObjectMapper json = new ObjectMapper();
        com.fasterxml.jackson.databind.node.ObjectNode manifest =
                (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(dir.resolve("manifest.json").toFile());
        for (JsonNode o : manifest.path("outputs")) {
            if (o.path("name").asText().equals(file)) {
                ((com.fasterxml.jackson.databind.node.ObjectNode) o).put("sha256", sha256);
            }
        }
        json.writeValue(dir.resolve("manifest.json").toFile(), manifest);
        StringBuilder sums = new StringBuilder();
        for (String f : ImageDirectory.FILES) {
            sums.append(Sha256.of(dir.resolve(f))).append("  ").append(f).append('\n');
        }
        Files.writeString(dir.resolve("SHA256SUMS"), sums);
        Checksums.write(staged.root());
    }

    /** Every path under {@code root} (Resolver's {@code .locks} aside) → the SHA-256 of a file, or "dir". */
    private static Map<String, String> tree(Path root) throws IOException {
        Map<String, String> out = new java.util.TreeMap<>();
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.toList()) {
                String name = root.relativize(p).toString();
                if (!name.equals(".locks") && !name.startsWith(".locks/")) {
                    out.put(name, Files.isDirectory(p) ? "dir" : Sha256.of(p));
                }
            }
        }
        return out;
    }

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
