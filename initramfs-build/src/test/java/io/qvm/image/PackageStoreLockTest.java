package io.qvm.image;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.image.PackageLock.Entry;
import io.qvm.protocol.image.Arch;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Builds that share one package cache take turns per package ({@link CacheLock}): threads of one
 * JVM, and another process holding a package's lock through the real lock ({@link CacheLockPeer}).
 * The mirror is a real HTTP server on loopback; the package a synthetic .deb.
 */
@Tag("unit")
class PackageStoreLockTest {
    private static final String POOL = "pool/main/s/synth-src/synth-bin_1_all.deb";

    @TempDir
    Path tmp;

    private Path deb() throws Exception {
        return new SyntheticDeb().dir("./", 0755).file("./usr/share/synth/a.txt", 0644, "a")
                .file("./usr/share/synth/b.txt", 0644, "b").write(tmp.resolve("src/main.deb"));
    }

    @Test
    void fourThreadsExtractingOnePackageAtOnceFetchItOnceAndAllSeeTheWholeTree() throws Exception {
        Path deb = deb();
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            mirror.put("debian", POOL, deb);
            Entry e = PackageFetchTest.entry("synth-bin", "bookworm", POOL, deb);
            List<CompletableFuture<Path>> builds = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                PackageStore store = new PackageStore(tmp.resolve("cache"), l -> { }, tmp.resolve("no-etc-apt"),
                        PackageFetchTest.env(mirror));
                builds.add(CompletableFuture.supplyAsync(() -> store.extracted(Arch.X86_64, e)));
            }
            for (CompletableFuture<Path> b : builds) {
                Path dir = b.get(60, TimeUnit.SECONDS);
                assertEquals("a", Files.readString(dir.resolve("usr/share/synth/a.txt")));
                assertEquals("b", Files.readString(dir.resolve("usr/share/synth/b.txt")));
            }
            assertEquals(1, mirror.requests().size(), "one download: " + mirror.requests());
        }
    }

    @Test
    void aPackageAnotherProcessHoldsIsFetchedOnlyOnceItLetsGo() throws Exception {
        Path deb = deb();
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            mirror.put("debian", POOL, deb);
            Entry e = PackageFetchTest.entry("synth-bin", "bookworm", POOL, deb);
            Path cache = tmp.resolve("cache");
            Path signals = Files.createDirectories(tmp.resolve("peer"));
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process peer = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                    CacheLockPeer.class.getName(), cache.resolve("locks").resolve(e.sha256() + ".deb").toString(),
                    signals.toString()).redirectErrorStream(true).redirectOutput(tmp.resolve("peer.log").toFile())
                    .redirectInput(new File("/dev/null")).start();
            try {
                await().atMost(Duration.ofSeconds(60)).until(() -> Files.exists(signals.resolve("held"))
                        || !peer.isAlive());
                assertTrue(peer.isAlive(), Files.readString(tmp.resolve("peer.log")));
                PackageStore store = new PackageStore(cache, l -> { }, tmp.resolve("no-etc-apt"),
                        PackageFetchTest.env(mirror));
                CompletableFuture<Path> build = CompletableFuture.supplyAsync(() -> store.extracted(Arch.X86_64, e));
                Thread.sleep(1000);
                assertFalse(build.isDone(), "the build waits while the other process holds the package");
                assertEquals(List.of(), mirror.requests(), "and fetched nothing meanwhile");
                Files.writeString(signals.resolve("release"), "");
                Path dir = build.get(60, TimeUnit.SECONDS);
                assertEquals("a", Files.readString(dir.resolve("usr/share/synth/a.txt")));
                assertEquals(1, mirror.requests().size());
                assertTrue(peer.waitFor(30, TimeUnit.SECONDS));
            } finally {
                peer.destroyForcibly();
            }
        }
    }
}
