package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.util.Sha256;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The release's SHA256SUMS: sha256sum's format, every file; a changed, missing or new file is refused. */
@Tag("unit")
class ChecksumsTest {

    @TempDir
    Path dir;

    @Test
    void recordsEveryFileAndRefusesAMismatchedChecksum() throws Exception {
        Files.createDirectories(dir.resolve("x86_64"));
        Files.writeString(dir.resolve("x86_64/vmlinuz"), "kernel");
        Files.writeString(dir.resolve("x86_64/initramfs.cpio.lz4"), "initramfs");
        Checksums.write(dir);
        assertEquals(List.of(Sha256.of("initramfs".getBytes()) + "  x86_64/initramfs.cpio.lz4",
                Sha256.of("kernel".getBytes()) + "  x86_64/vmlinuz"), Files.readAllLines(dir.resolve("SHA256SUMS")));
        assertEquals(List.of(), Checksums.verify(dir));

        Files.writeString(dir.resolve("x86_64/vmlinuz"), "kernel, changed");
        List<String> problems = Checksums.verify(dir);
        assertEquals(List.of("checksum mismatch for x86_64/vmlinuz: recorded sha256 " + Sha256.of("kernel".getBytes())
                + ", the file now has " + Sha256.of("kernel, changed".getBytes()) + " (it changed after staging)"),
                problems);

        Files.writeString(dir.resolve("x86_64/vmlinuz"), "kernel");
        Files.delete(dir.resolve("x86_64/initramfs.cpio.lz4"));
        Files.writeString(dir.resolve("x86_64/new"), "?");
        problems = Checksums.verify(dir);
        assertEquals(2, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("x86_64/initramfs.cpio.lz4 is missing"), problems.toString());
        assertTrue(problems.get(1).startsWith("x86_64/new is not in SHA256SUMS"), problems.toString());
    }

    @Test
    void againstTheSumsRecordedAtStagingARewrittenChecksumFileDoesNotHideAChange() throws Exception {
        Files.writeString(dir.resolve("vmlinuz"), "kernel");
        Map<String, String> recorded = new TreeMap<>(Checksums.write(dir));
        recorded.put("SHA256SUMS", Sha256.of(dir.resolve("SHA256SUMS")));
        assertEquals(List.of(), Checksums.verify(dir, recorded));

        Files.writeString(dir.resolve("vmlinuz"), "kernel, changed");
        Checksums.write(dir);
        assertEquals(List.of(), Checksums.verify(dir), "the file agrees with the rewritten SHA256SUMS");
        List<String> problems = Checksums.verify(dir, recorded);
        assertEquals(2, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("checksum mismatch for SHA256SUMS: recorded sha256 "), problems.toString());
        assertTrue(problems.get(1).startsWith("checksum mismatch for vmlinuz: recorded sha256 "
                + Sha256.of("kernel".getBytes())), problems.toString());

        Files.writeString(dir.resolve("vmlinuz"), "kernel");
        Files.writeString(dir.resolve("new"), "?");
        recorded.put("SHA256SUMS", Sha256.of(dir.resolve("SHA256SUMS")));
        assertEquals(List.of("new is not in the sums recorded at staging (it appeared after staging)"),
                Checksums.verify(dir, recorded));
    }

    @Test
    void addingTheReportKeepsEveryRecordedLineAndAMalformedFileIsAProblem() throws Exception {
        Files.writeString(dir.resolve("a"), "a");
        Checksums.write(dir);
        Files.writeString(dir.resolve("release.json"), "{}");
        Checksums.add(dir, List.of("release.json"));
        assertEquals(List.of(), Checksums.verify(dir));
        assertEquals(2, Files.readAllLines(dir.resolve("SHA256SUMS")).size());

        Files.writeString(dir.resolve("SHA256SUMS"), "not a checksum line\n");
        assertTrue(Checksums.verify(dir).get(0).contains("malformed line"), Checksums.verify(dir).toString());
        Files.writeString(dir.resolve("SHA256SUMS"), "0".repeat(64) + "  ../outside\n");
        assertTrue(Checksums.verify(dir).get(0).contains("outside"), Checksums.verify(dir).toString());
    }
}
