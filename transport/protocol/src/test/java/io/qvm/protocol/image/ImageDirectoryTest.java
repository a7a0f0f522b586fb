package io.qvm.protocol.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The manifest record against a manifest the builder wrote, and the one verifier of an image directory. */
@Tag("unit")
class ImageDirectoryTest {

    @TempDir
    Path tmp;

    private static String builtManifest() throws IOException {
        try (InputStream in = ImageDirectoryTest.class.getResourceAsStream("manifest.json")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void aManifestTheBuilderWroteReadsAndWritesBackByteForByte() throws IOException {
        String json = builtManifest();
        ImageManifest m = ImageManifest.parse(json);
        assertEquals(json, m.toJson());
        assertEquals("x86_64", m.arch());
        assertEquals("linux-image-6.1.0-57-amd64", m.kernel().packageName());
        assertEquals(m.kernel().version(), m.kernelVersion().orElseThrow());
        assertEquals(List.of("serial"), m.supportedTransports(), "no transports listed: serial only");
        assertEquals(2, m.outputFiles().size());
        assertTrue(m.fixedLimits().rlimitNofile() > 0);
        assertTrue(m.crngReseed(), "the builder's init reseeds clones from the host's seed (adr/0012)");
    }

    @Test
    void unknownFieldsAreIgnoredAndAbsentOnesAreNotWritten() throws IOException {
        ImageManifest m = ImageManifest.parse("{\"arch\":\"aarch64\",\"later\":{\"x\":1},\"transports\":[\"serial\",\"vsock\"]}");
        assertEquals(List.of("serial", "vsock"), m.supportedTransports());
        assertEquals("{\n  \"format\" : 0,\n  \"arch\" : \"aarch64\",\n  \"reproducible\" : false,\n"
                + "  \"source_date_epoch\" : 0,\n  \"transports\" : [\n    \"serial\",\n    \"vsock\"\n  ]\n}\n", m.toJson());
        assertTrue(ImageManifest.parse("{}").kernelVersion().isEmpty());
        assertFalse(m.crngReseed(), "an older image's init cannot reseed; and false is not written");
    }

    /** An image directory as the builder leaves it, with real hashes. */
    private Path image(String arch) throws IOException {
        Path dir = tmp.resolve(arch);
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(ImageDirectory.KERNEL), "kernel");
        Files.writeString(dir.resolve(ImageDirectory.INITRAMFS), "initramfs");
        String outputs = "[{\"name\":\"vmlinuz\",\"sha256\":\"" + Sha256.of(dir.resolve("vmlinuz"))
                + "\",\"size\":6}]";
        Files.writeString(dir.resolve(ImageDirectory.MANIFEST), "{\"arch\":\"" + arch + "\",\"outputs\":" + outputs + "}");
        writeSums(dir);
        return dir;
    }

    private static void writeSums(Path dir) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (String f : ImageDirectory.FILES) {
            sb.append(Sha256.of(dir.resolve(f))).append("  ").append(f).append('\n');
        }
        Files.writeString(dir.resolve(ImageDirectory.SHA256SUMS), sb.toString());
    }

    @Test
    void aCompleteImageVerifies() throws IOException {
        Path dir = image("x86_64");
        ImageDirectory.Verified v = ImageDirectory.verify(dir, Arch.X86_64);
        assertTrue(v.ok(), v.problems().toString());
        assertEquals(Sha256.of(dir.resolve("vmlinuz")), v.sha256().get("vmlinuz"));
        assertEquals("x86_64", v.manifest().orElseThrow().arch());
    }

    @Test
    void aModifiedFileIsNamedFirst() throws IOException {
        Path dir = image("x86_64");
        Files.writeString(dir.resolve("vmlinuz"), "kernel, patched");
        List<String> problems = ImageDirectory.verify(dir, Arch.X86_64).problems();
        assertTrue(problems.get(0).startsWith("checksum mismatch for " + dir.resolve("vmlinuz")), problems.toString());
        assertTrue(problems.get(0).endsWith("The image is damaged or was modified"), problems.toString());
        assertEquals("vmlinuz does not match manifest.json", problems.get(1));
    }

    @Test
    void missingUnlistedOutsideAndMalformedAreProblems() throws IOException {
        Path dir = image("x86_64");
        Files.delete(dir.resolve("initramfs.cpio.lz4"));
        assertEquals(List.of("the guest image at " + dir + " is missing initramfs.cpio.lz4"),
                ImageDirectory.verify(dir, Arch.X86_64).problems());

        Path sums = dir.resolve(ImageDirectory.SHA256SUMS);
        Files.writeString(sums, Files.readString(sums).lines().filter(l -> l.endsWith("vmlinuz")).findFirst()
                .orElseThrow() + "\n" + "0".repeat(64) + "  ../escape\nnot a line\n");
        List<String> problems = ImageDirectory.verify(dir, Arch.X86_64).problems();
        assertEquals(sums + " has a malformed line: not a line", problems.get(0), problems.toString());
        assertTrue(problems.contains("SHA256SUMS at " + dir + " names a file outside the image: ../escape"),
                problems.toString());

        Files.delete(sums);
        assertEquals(List.of("the guest image at " + dir + " has no SHA256SUMS"),
                ImageDirectory.verify(dir, Arch.X86_64).problems());
    }

    /**
     * An earlier qvm's image (gzip initramfs, listed in its SHA256SUMS) is named as such first, for
     * every caller of the verifier (the backend, `qvm image verify`, the release gate, a zip's
     * import); the generic problems follow. A stray old file beside a complete image is no problem.
     */
    @Test
    void anEarlierQvmsImageIsNamedAsSuchFirst() throws IOException {
        Path dir = image("x86_64");
        Files.move(dir.resolve(ImageDirectory.INITRAMFS), dir.resolve(ImageDirectory.OLD_GZIP_INITRAMFS));
        Path sums = dir.resolve(ImageDirectory.SHA256SUMS);
        Files.writeString(sums, Files.readString(sums).replace(ImageDirectory.INITRAMFS, ImageDirectory.OLD_GZIP_INITRAMFS));
        List<String> problems = ImageDirectory.verify(dir, Arch.X86_64).problems();
        assertEquals("the guest image at " + dir + " was built by an earlier qvm: its initramfs is initramfs.cpio.gz"
                + " (gzip), and this qvm boots initramfs.cpio.lz4 (LZ4, since 2026-12-07)", problems.get(0));
        assertEquals(List.of("SHA256SUMS at " + dir + " does not list initramfs.cpio.lz4"), problems.subList(1, problems.size()));

        Path complete = image("aarch64-beside");
        Files.writeString(complete.resolve(ImageDirectory.OLD_GZIP_INITRAMFS), "left over");
        Files.writeString(complete.resolve(ImageDirectory.MANIFEST), Files.readString(complete.resolve(ImageDirectory.MANIFEST))
                .replace("aarch64-beside", "x86_64"));
        writeSums(complete);
        assertTrue(ImageDirectory.verify(complete, Arch.X86_64).ok(), ImageDirectory.verify(complete, Arch.X86_64).problems().toString());
    }

    @Test
    void anImageForAnotherArchOrWithABrokenManifestIsRefused() throws IOException {
        Path dir = image("aarch64");
        assertEquals(List.of("the image at " + dir + " is for aarch64, not x86_64"),
                ImageDirectory.verify(dir, Arch.X86_64).problems());
        Files.writeString(dir.resolve(ImageDirectory.MANIFEST), "{not json");
        writeSums(dir);
        ImageDirectory.Verified v = ImageDirectory.verify(dir, Arch.AARCH64);
        assertFalse(v.ok());
        assertTrue(v.manifest().isEmpty());
        assertTrue(v.problems().get(0).startsWith("manifest.json at " + dir + " is not valid JSON"), v.problems().toString());
    }
}
