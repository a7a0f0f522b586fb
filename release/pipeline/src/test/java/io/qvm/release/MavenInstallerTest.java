package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.Sha256;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipFile;
import org.apache.maven.model.Model;
import org.apache.maven.model.io.xpp3.MavenXpp3Reader;
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
            for (String f : List.of("vmlinuz", "initramfs.cpio.gz", "manifest.json", "SHA256SUMS", "sbom.cdx.json")) {
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
                assertEquals(List.of("SHA256SUMS", "initramfs.cpio.gz", "manifest.json", "sbom.cdx.json", "vmlinuz"),
                        z.stream().map(java.util.zip.ZipEntry::getName).toList());
                assertEquals("initramfs.cpio.gz of " + a,
                        new String(z.getInputStream(z.getEntry("initramfs.cpio.gz")).readAllBytes()));
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

    @Test
    void theRepositoryIsTheOptionElseTheOneTheBackendLooksIn() {
        assertEquals(tmp.resolve("r"), MavenInstaller.localRepository(tmp.resolve("r")));
        assertEquals(io.qvm.backend.image.LocalMavenRepository.system().root(), MavenInstaller.localRepository(null));
    }

    @Test
    void theImageZipIsTheSameBytesEveryTimeAndHoldsTheImageOnly() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("img"));
        for (String f : List.of("vmlinuz", "initramfs.cpio.gz", "manifest.json", "SHA256SUMS")) {
            Files.writeString(dir.resolve(f), f);
        }
        ImageZipWriter.write(dir, tmp.resolve("1.zip"));
        assertEquals(Map.of("vmlinuz", Sha256.of("vmlinuz".getBytes()), "initramfs.cpio.gz",
                Sha256.of("initramfs.cpio.gz".getBytes()), "manifest.json", Sha256.of("manifest.json".getBytes()),
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
