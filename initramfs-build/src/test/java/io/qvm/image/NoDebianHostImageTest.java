package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qvm.image.PackageLock.Entry;
import io.qvm.protocol.image.Arch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole x86_64 image, twice: once in this JVM with the host's package cache and apt sources
 * (on this host: trees that dpkg-deb extracted, where the cache has them), once in a child JVM
 * with an empty PATH, no apt sources and an empty cache, every pinned package downloaded from a
 * loopback mirror and extracted in Java. The two {@code SHA256SUMS} must be equal.
 *
 * <p>Slow (two full builds, minutes each, CPU-heavy), so off unless
 * {@code -Dqvm.image.fullBuild=true}; needs every pinned x86_64 package in the host cache and a
 * worker jar ({@code -Dqvm.image.workerJar}, default renderer-worker/target/renderer-worker.jar).
 */
@Tag("unit")
class NoDebianHostImageTest {
    @Test
    void theImageBuiltWithoutDebianToolsIsByteForByteTheSame(@TempDir Path tmp) throws Exception {
        assumeTrue(Boolean.getBoolean("qvm.image.fullBuild"), "slow: enable with -Dqvm.image.fullBuild=true");
        Path worker = Path.of(System.getProperty("qvm.image.workerJar",
                ImageInfo.repoRoot().resolve("renderer-worker/target/renderer-worker.jar").toString()));
        assumeTrue(Files.isRegularFile(worker), "no worker jar at " + worker);
        PackageLock lock = PackageLock.bundled();

        ImageBuilder.Result host = ImageBuilder.builder().arch(Arch.X86_64).outDir(tmp.resolve("out-host"))
                .workerJar(worker).mtime(0).build().run();

        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            for (Entry e : lock.entries(Arch.X86_64)) {
                Path deb = PackageStore.defaultCache().resolve("debs").resolve(e.sha256() + ".deb");
                mirror.put(e.suite().endsWith("-security") ? "debian-security" : "debian", e.filename(), deb);
            }
            ProcessBuilder pb = new ProcessBuilder(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"), ImageBuildMain.class.getName(), "build",
                    "--arch", "x86_64", "--out", tmp.resolve("out-bare").toString(),
                    "--worker-jar", worker.toString());
            pb.environment().clear();
            pb.environment().put("PATH", Files.createDirectories(tmp.resolve("empty-bin")).toString());
            pb.environment().put("HOME", tmp.toString());
            pb.environment().put("QVM_CACHE", tmp.resolve("bare-cache").toString());
            pb.environment().putAll(PackageFetchTest.env(mirror));
            pb.redirectErrorStream(true).redirectOutput(tmp.resolve("bare.log").toFile());
            Process p = pb.start();
            assertTrue(p.waitFor(30, TimeUnit.MINUTES), "the bare build did not finish");
            assertEquals(0, p.exitValue(), Files.readString(tmp.resolve("bare.log")));
        }
        assertEquals(Files.readString(host.dir().resolve(ImageBuilder.SHA256SUMS)),
                Files.readString(tmp.resolve("out-bare/x86_64").resolve(ImageBuilder.SHA256SUMS)));
    }
}
