package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.internal.image.TestKeys;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.Sha256;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipFile;
import org.apache.maven.model.Model;
import org.apache.maven.model.io.xpp3.MavenXpp3Reader;
import org.eclipse.aether.artifact.Artifact;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The install into a local repository through Maven Resolver: the POM, and per architecture the
 * zip and the manifest with the architecture as classifier, at exactly the paths rel-shared names,
 * with exactly the bytes given; the zip holds the image directory's files at its root.
 */
@Tag("unit")
class MavenInstallerTest {

    @TempDir
    Path tmp;

    @Test
    void installsThePomAndEachArchitecturesZipAndManifestAtTheAgreedPaths() throws Exception {
        String v = "0.1.0-SNAPSHOT";
        Path pom = tmp.resolve("qvm-image.pom");
        MavenInstaller.writePom(v, pom);
        Map<Arch, Path> zips = new LinkedHashMap<>();
        Map<Arch, Path> manifests = new LinkedHashMap<>();
        for (Arch a : Arch.values()) {
            Path dir = Files.createDirectories(tmp.resolve("image").resolve(a.id()));
            for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS", "sbom.cdx.json")) {
                Files.writeString(dir.resolve(f), f + " of " + a);
            }
            Path zip = tmp.resolve(a.id() + ".zip");
            ImageZipWriter.write(dir, zip);
            zips.put(a, zip);
            manifests.put(a, dir.resolve("manifest.json"));
        }
        Path repo = tmp.resolve("repository");

        MavenInstaller.Installed installed = MavenInstaller.install(repo, v, pom, zips, manifests);

        Path base = repo.resolve("io/qvm/qvm-image/0.1.0-SNAPSHOT");
        assertEquals(List.of(base.resolve("qvm-image-0.1.0-SNAPSHOT.pom"),
                base.resolve("qvm-image-0.1.0-SNAPSHOT-x86_64.zip"), base.resolve("qvm-image-0.1.0-SNAPSHOT-x86_64.json"),
                base.resolve("qvm-image-0.1.0-SNAPSHOT-aarch64.zip"), base.resolve("qvm-image-0.1.0-SNAPSHOT-aarch64.json")),
                installed.files());
        assertEquals(-1, Files.mismatch(pom, base.resolve("qvm-image-0.1.0-SNAPSHOT.pom")));
        for (Arch a : Arch.values()) {
            assertEquals(-1, Files.mismatch(zips.get(a), MavenInstaller.path(repo, v, a.id(), "zip")));
            assertEquals("manifest.json of " + a, Files.readString(MavenInstaller.path(repo, v, a.id(), "json")));
            try (ZipFile z = new ZipFile(MavenInstaller.path(repo, v, a.id(), "zip").toFile())) {
                assertEquals(List.of("SHA256SUMS", "initramfs.cpio.lz4", "manifest.json", "sbom.cdx.json", "vmlinuz"),
                        z.stream().map(java.util.zip.ZipEntry::getName).toList());
                assertEquals("initramfs.cpio.lz4 of " + a,
                        new String(z.getInputStream(z.getEntry("initramfs.cpio.lz4")).readAllBytes()));
            }
        }
        try (Reader r = Files.newBufferedReader(base.resolve("qvm-image-0.1.0-SNAPSHOT.pom"))) {
            Model m = new MavenXpp3Reader().read(r);
            assertEquals("io.qvm", m.getGroupId());
            assertEquals("qvm-image", m.getArtifactId());
            assertEquals(v, m.getVersion());
            assertEquals("pom", m.getPackaging());
        }
        assertTrue(Files.isRegularFile(base.resolve("maven-metadata-local.xml")), "Resolver's own record");
    }

    /**
     * The libraries go in with the image, in one install: the parent's and the BOM's POM, per
     * library its POM, jar, sources and javadoc jar, byte for byte, each with an {@code .asc} that
     * the release key's public key verifies (and that does not verify another file); the undo
     * recorded before takes all of it back.
     */
    @Test
    void installsTheLibrariesWithTheImageEachSignedAndTakesThemBack() throws Exception {
        String v = "2.0.0";
        TestKeys.Key key = TestKeys.generate("qvm release <release@qvm.test>", "s3cret");
        ReleaseSigner signer = ReleaseSigner.load(key.writeSecret(tmp.resolve("key.asc")), "s3cret".toCharArray());
        LibraryArtifacts libs = LibraryArtifacts.fromReactor(Reactors.write(tmp.resolve("reactor"), v), v);
        assertEquals(Reactors.LIBRARIES, libs.libraries());
        Path pom = tmp.resolve("qvm-image.pom");
        MavenInstaller.writePom(v, pom);
        Path zip = Files.writeString(tmp.resolve("x86_64.zip"), "zip");
        Path manifest = Files.writeString(tmp.resolve("x86_64.json"), "{}");
        List<Artifact> all = new ArrayList<>(MavenInstaller.imageArtifacts(v, pom,
                Map.of(Arch.X86_64, zip), Map.of(Arch.X86_64, manifest)));
        all.addAll(libs.artifacts());
        List<Artifact> signed = MavenInstaller.signed(all, signer, tmp.resolve("asc"));
        assertEquals(2 * all.size(), signed.size(), "each artifact and its signature");
        Path repo = tmp.resolve("repository");

        MavenInstaller.Undo undo = MavenInstaller.Undo.record(repo, signed, tmp.resolve("previous"));
        MavenInstaller.Installed installed = MavenInstaller.install(repo, signed);

        List<String> expected = new ArrayList<>(List.of("qvm-parent/2.0.0/qvm-parent-2.0.0.pom",
                "qvm-bom/2.0.0/qvm-bom-2.0.0.pom"));
        for (String lib : Reactors.LIBRARIES) {
            for (String suffix : List.of(".pom", ".jar", "-sources.jar", "-javadoc.jar")) {
                expected.add(lib + "/2.0.0/" + lib + "-2.0.0" + suffix);
            }
        }
        for (String f : expected) {
            Path file = repo.resolve("io/qvm/" + f);
            assertTrue(installed.files().contains(file), f + " in " + installed.files());
            assertTrue(MavenDeployerTest.verifies(file.resolveSibling(file.getFileName() + ".asc"), file, key),
                    f + ".asc is the release key's signature of it");
            assertTrue(installed.files().contains(file.resolveSibling(file.getFileName() + ".asc")), f + ".asc");
        }
        Path jar = repo.resolve("io/qvm/qvm-qemu-backend/2.0.0/qvm-qemu-backend-2.0.0.jar");
        assertEquals("the jar qvm-qemu-backend-2.0.0.jar", Files.readString(jar));
        assertEquals(-1, Files.mismatch(tmp.resolve("reactor/protocol/pom.xml"),
                repo.resolve("io/qvm/qvm-protocol/2.0.0/qvm-protocol-2.0.0.pom")), "the module's own POM");
        assertFalse(MavenDeployerTest.verifies(jar.resolveSibling("qvm-qemu-backend-2.0.0-javadoc.jar.asc"), jar, key),
                "a signature is of its own file only");
        assertTrue(MavenDeployerTest.verifies(MavenInstaller.path(repo, v, "x86_64", "zip").resolveSibling(
                "qvm-image-2.0.0-x86_64.zip.asc"), MavenInstaller.path(repo, v, "x86_64", "zip"), key), "the image too");

        assertEquals(List.of(), undo.restore());
        assertFalse(Files.exists(repo), "the undo takes every artifact back, the directories it made with them");
    }

    @Test
    void theRepositoryIsTheOptionElseTheOneTheBackendLooksIn() {
        assertEquals(tmp.resolve("r"), MavenInstaller.localRepository(tmp.resolve("r")));
        assertEquals(io.qvm.internal.image.LocalMavenRepository.system().root(), MavenInstaller.localRepository(null));
    }

    @Test
    void theImageZipIsTheSameBytesEveryTimeAndHoldsTheImageOnly() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("img"));
        for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS")) {
            Files.writeString(dir.resolve(f), f);
        }
        ImageZipWriter.write(dir, tmp.resolve("1.zip"));
        assertEquals(Map.of("vmlinuz", Sha256.of("vmlinuz".getBytes()), "initramfs.cpio.lz4",
                Sha256.of("initramfs.cpio.lz4".getBytes()), "manifest.json", Sha256.of("manifest.json".getBytes()),
                "SHA256SUMS", Sha256.of("SHA256SUMS".getBytes())), ImageZipWriter.sha256(tmp.resolve("1.zip")),
                "each entry's SHA-256, as the release checks it before the install");
        Files.setLastModifiedTime(dir.resolve("vmlinuz"), java.nio.file.attribute.FileTime.fromMillis(0));
        ImageZipWriter.write(dir, tmp.resolve("2.zip"));
        assertEquals(-1, Files.mismatch(tmp.resolve("1.zip"), tmp.resolve("2.zip")));

        Files.writeString(dir.resolve("notes.txt"), "?");
        java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                () -> ImageZipWriter.write(dir, tmp.resolve("3.zip")));
        assertTrue(e.getMessage().contains("notes.txt does not belong"), e.getMessage());
        Files.delete(dir.resolve("notes.txt"));
        Files.delete(dir.resolve("SHA256SUMS"));
        e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                () -> ImageZipWriter.write(dir, tmp.resolve("4.zip")));
        assertTrue(e.getMessage().contains("lacks [SHA256SUMS]"), e.getMessage());
    }
}
