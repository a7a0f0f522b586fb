package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.image.PackageLock.Entry;
import io.qvm.protocol.image.Arch;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A host without Debian's tools, simulated for real: {@code qvm-image fetch} runs in a child JVM
 * whose PATH is an empty directory (no apt-get, apt-cache, dpkg-deb, tar, xz, nothing), whose
 * environment holds only the cache, HOME and the two mirror variables (so no apt sources are
 * read), against a mirror served on loopback that holds the pinned packages: real ones from
 * this host's package cache where it has them (busybox-static, zlib1g, fonts-dejavu-core,
 * libffi8, which the build takes) and a synthetic one for the security archive. The child must
 * download, verify and extract every one, and its trees must equal {@code dpkg-deb -x}'s.
 */
@Tag("unit")
class NoDebianHostFetchTest {
    private static final List<String> REAL = List.of("busybox-static", "zlib1g", "fonts-dejavu-core", "libffi8");

    @Test
    void fetchAndExtractNeedNoAptNoDpkgAndNoEtcApt(@TempDir Path tmp) throws Exception {
        List<Entry> entries = new ArrayList<>();
        for (Entry e : PackageLock.bundled().entries(Arch.X86_64)) {
            Path cached = PackageStore.defaultCache().resolve("debs").resolve(e.sha256() + ".deb");
            if (REAL.contains(e.name()) && Files.isRegularFile(cached)) {
                entries.add(e);
            }
        }
        Path sec = new SyntheticDeb().dir("./", 0755).dir("./usr", 0755).dir("./usr/lib", 0755)
                .file("./usr/lib/libsynth.so.1.0", 0644, "synthetic")
                .symlink("./usr/lib/libsynth.so.1", "libsynth.so.1.0")
                .write(tmp.resolve("src/synth-sec.deb"));
        entries.add(PackageFetchTest.entry("synth-sec", "bookworm-security",
                "pool/updates/main/s/synth-src/synth-sec_2_all.deb", sec));
        Path lock = tmp.resolve("packages.lock");
        Files.writeString(lock, new PackageLock(Map.of(Arch.X86_64, entries)).toJson());

        Path emptyBin = Files.createDirectories(tmp.resolve("empty-bin"));
        Path cache = tmp.resolve("cache");
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            for (Entry e : entries) {
                Path deb = e.name().equals("synth-sec") ? sec
                        : PackageStore.defaultCache().resolve("debs").resolve(e.sha256() + ".deb");
                mirror.put(e.suite().endsWith("-security") ? "debian-security" : "debian", e.filename(), deb);
            }
            ProcessBuilder pb = new ProcessBuilder(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", System.getProperty("java.class.path"),
                    ImageBuildMain.class.getName(), "fetch", "--arch", "x86_64", "--lock", lock.toString(), "--json");
            pb.environment().clear();
            pb.environment().put("PATH", emptyBin.toString());
            pb.environment().put("HOME", tmp.toString());
            pb.environment().put("QVM_CACHE", cache.toString());
            pb.environment().putAll(PackageFetchTest.env(mirror));
            pb.redirectError(tmp.resolve("stderr.txt").toFile());
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes());
            assertTrue(p.waitFor(5, TimeUnit.MINUTES), "the child JVM did not finish");
            String err = Files.readString(tmp.resolve("stderr.txt"));
            assertEquals(0, p.exitValue(), "qvm-image fetch without Debian tools failed:\n" + err + out);

            JsonNode j = new ObjectMapper().readTree(out);
            assertTrue(j.path("ok").asBoolean(), out);
            assertEquals(entries.size(), j.path("packages").size(), out);
            assertEquals(entries.size(), mirror.requests().size(), mirror.requests().toString());
            for (Entry e : entries) {
                Path deb = cache.resolve("debs").resolve(e.sha256() + ".deb");
                assertEquals(e.sha256(), Sha256.of(deb), e.label());
                Path reference = Files.createDirectories(tmp.resolve("dpkg").resolve(e.name()));
                Process d = new ProcessBuilder("dpkg-deb", "-x", deb.toString(), reference.toString())
                        .redirectErrorStream(true).start();
                d.getInputStream().readAllBytes();
                assertEquals(0, d.waitFor(), "dpkg-deb -x " + deb);
                assertEquals(TreeDescription.of(reference),
                        TreeDescription.of(cache.resolve("extracted").resolve(e.sha256())), e.label());
            }
        }
        assertTrue(emptyBin.toFile().list().length == 0 && !new File(emptyBin.toFile(), "dpkg-deb").exists());
    }
}
