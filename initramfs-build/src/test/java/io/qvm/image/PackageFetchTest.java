package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.image.PackageLock.Entry;
import io.qvm.image.PackageLock.Role;
import io.qvm.protocol.image.Arch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Downloads without apt: pinned packages straight from a mirror's pool, served on loopback by a
 * real HTTP server; the lock's SHA-256 decides what is kept.
 */
@Tag("unit")
@Tag("security")
class PackageFetchTest {
    private static final String MAIN_POOL = "pool/main/s/synth-src/synth-bin_1_all.deb";
    private static final String SECURITY_POOL = "pool/updates/main/s/synth-src/synth-sec_2_all.deb";

    @Test
    void pinnedPackagesComeFromTheMirrorsTheEnvironmentNames(@TempDir Path tmp) throws Exception {
        Path main = new SyntheticDeb().dir("./", 0755).file("./usr/share/synth/main.txt", 0644, "main")
                .write(tmp.resolve("src/main.deb"));
        Path sec = new SyntheticDeb().dir("./", 0755).file("./usr/share/synth/sec.txt", 0644, "security")
                .write(tmp.resolve("src/sec.deb"));
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            mirror.put("debian", MAIN_POOL, main);
            mirror.put("debian-security", SECURITY_POOL, sec);
            List<String> progress = new ArrayList<>();
            PackageStore store = new PackageStore(tmp.resolve("cache"), progress::add,
                    tmp.resolve("no-etc-apt"), env(mirror));
            Path a = store.extracted(Arch.X86_64, entry("synth-bin", "bookworm", MAIN_POOL, main));
            Path b = store.extracted(Arch.X86_64, entry("synth-sec", "bookworm-security", SECURITY_POOL, sec));
            assertEquals("main", Files.readString(a.resolve("usr/share/synth/main.txt")));
            assertEquals("security", Files.readString(b.resolve("usr/share/synth/sec.txt")));
            assertEquals(List.of("/debian/" + MAIN_POOL, "/debian-security/" + SECURITY_POOL), mirror.requests());
            assertTrue(progress.stream().anyMatch(l -> l.contains(DebianMirrors.ARCHIVE_ENV)), progress.toString());

            // cached: a second store needs no mirror at all
            PackageStore offline = new PackageStore(tmp.resolve("cache"), l -> { }, tmp.resolve("no-etc-apt"), Map.of());
            offline.deb(Arch.X86_64, entry("synth-bin", "bookworm", MAIN_POOL, main));
            assertEquals(2, mirror.requests().size());
        }
    }

    @Test
    void aCachedExtractionWithoutItsCompletionMarkerIsExtractedAgainNotTrusted(@TempDir Path tmp) throws Exception {
        Path main = new SyntheticDeb().dir("./", 0755).file("./usr/lib/modules/6.1/k.ko", 0644, "module")
                .file("./usr/share/doc/synth-bin/copyright", 0644, "c").write(tmp.resolve("src/main.deb"));
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            mirror.put("debian", MAIN_POOL, main);
            Entry pinned = entry("synth-bin", "bookworm", MAIN_POOL, main);
            // what a tool that is not this store left under the package's hash: only its documentation
            Path planted = tmp.resolve("cache/extracted").resolve(pinned.sha256());
            Files.createDirectories(planted.resolve("usr/share/doc/synth-bin"));
            List<String> progress = new ArrayList<>();
            PackageStore store = new PackageStore(tmp.resolve("cache"), progress::add, tmp.resolve("no-etc-apt"),
                    env(mirror));
            Path dir = store.extracted(Arch.X86_64, pinned);
            assertEquals("module", Files.readString(dir.resolve("usr/lib/modules/6.1/k.ko")));
            assertTrue(progress.stream().anyMatch(l -> l.contains("has no completion marker")), progress.toString());
            assertTrue(Files.isRegularFile(tmp.resolve("cache/extracted").resolve(pinned.sha256() + ".done")));
            // marked now: the next use takes it as it is, without the mirror
            int requests = mirror.requests().size();
            assertEquals(dir, store.extracted(Arch.X86_64, pinned));
            assertEquals(requests, mirror.requests().size());
        }
    }

    @Test
    void aMirrorServingOtherBytesIsRefusedNamingThePackageAndBothHashesAndNothingIsKept(@TempDir Path tmp)
            throws Exception {
        Path main = new SyntheticDeb().dir("./", 0755).file("./a", 0644, "pinned").write(tmp.resolve("src/main.deb"));
        byte[] evil = Files.readAllBytes(new SyntheticDeb().dir("./", 0755).file("./a", 0644, "evil")
                .write(tmp.resolve("src/evil.deb")));
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            mirror.put("debian", MAIN_POOL, main);
            mirror.replace("/debian/" + MAIN_POOL, evil);
            PackageStore store = new PackageStore(tmp.resolve("cache"), l -> { }, tmp.resolve("no-etc-apt"), env(mirror));
            Entry pinned = entry("synth-bin", "bookworm", MAIN_POOL, main);
            PackageHashMismatchException e = assertThrows(PackageHashMismatchException.class,
                    () -> store.extracted(Arch.X86_64, pinned));
            String actual = Sha256.of(evil);
            assertEquals(pinned.sha256(), e.expected());
            assertEquals(actual, e.actual());
            assertTrue(e.getMessage().contains("synth-bin 1 (all)"), e.getMessage());
            assertTrue(e.getMessage().contains(pinned.sha256()) && e.getMessage().contains(actual), e.getMessage());
            assertCacheHoldsNoPackage(tmp.resolve("cache"));
        }
    }

    @Test
    void aVersionTheMirrorNoLongerHasIsATypedErrorAndLeavesNothing(@TempDir Path tmp) throws Exception {
        Path main = new SyntheticDeb().dir("./", 0755).file("./a", 0644, "x").write(tmp.resolve("src/main.deb"));
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            PackageStore store = new PackageStore(tmp.resolve("cache"), l -> { }, tmp.resolve("no-etc-apt"), env(mirror));
            PackageFetchException e = assertThrows(PackageFetchException.class,
                    () -> store.deb(Arch.X86_64, entry("synth-bin", "bookworm", MAIN_POOL, main)));
            assertTrue(e.getMessage().contains("HTTP 404"), e.getMessage());
            assertTrue(e.getMessage().contains(PackageLock.REFRESH_COMMAND), e.getMessage());
            assertCacheHoldsNoPackage(tmp.resolve("cache"));
        }
    }

    @Test
    void moreBytesThanTheLockPinsAreCutOff(@TempDir Path tmp) throws Exception {
        Path main = new SyntheticDeb().dir("./", 0755).file("./a", 0644, "x").write(tmp.resolve("src/main.deb"));
        try (LoopbackMirror mirror = new LoopbackMirror(Files.createDirectories(tmp.resolve("www")))) {
            mirror.put("debian", MAIN_POOL, main);
            mirror.replace("/debian/" + MAIN_POOL, new byte[(int) Files.size(main) + 4096]);
            PackageStore store = new PackageStore(tmp.resolve("cache"), l -> { }, tmp.resolve("no-etc-apt"), env(mirror));
            PackageFetchException e = assertThrows(PackageFetchException.class,
                    () -> store.deb(Arch.X86_64, entry("synth-bin", "bookworm", MAIN_POOL, main)));
            assertTrue(e.getMessage().contains("more than the " + Files.size(main) + " bytes"), e.getMessage());
            assertCacheHoldsNoPackage(tmp.resolve("cache"));
        }
    }

    @Test
    void noVariablesAndNoAptSourcesIsAnErrorNamingBothVariables(@TempDir Path tmp) throws Exception {
        Path main = new SyntheticDeb().dir("./", 0755).file("./a", 0644, "x").write(tmp.resolve("src/main.deb"));
        PackageStore store = new PackageStore(tmp.resolve("cache"), l -> { }, tmp.resolve("no-etc-apt"), Map.of());
        MirrorConfigurationException e = assertThrows(MirrorConfigurationException.class,
                () -> store.deb(Arch.X86_64, entry("synth-bin", "bookworm", MAIN_POOL, main)));
        assertTrue(e.getMessage().contains(DebianMirrors.ARCHIVE_ENV), e.getMessage());
        assertTrue(e.getMessage().contains(DebianMirrors.SECURITY_ENV), e.getMessage());
        assertTrue(e.getMessage().contains(tmp.resolve("no-etc-apt").toString()), e.getMessage());
    }

    @Test
    void mirrorsComeFromTheVariablesFirstThenAptSources(@TempDir Path tmp) throws Exception {
        Path etc = Files.createDirectories(tmp.resolve("etc-apt/sources.list.d"));
        Files.writeString(etc.resolve("debian.sources"), "Types: deb\nURIs: http://apt.example/debian\n"
                + "Suites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\n"
                + "URIs: http://apt.example/debian-security\nSuites: bookworm-security\nComponents: main\n");
        Path etcApt = tmp.resolve("etc-apt");

        DebianMirrors apt = DebianMirrors.resolve(Map.of(), etcApt);
        assertEquals("http://apt.example/debian", apt.archive().toString());
        assertEquals("http://apt.example/debian-security", apt.security().toString());

        DebianMirrors both = DebianMirrors.resolve(Map.of(DebianMirrors.ARCHIVE_ENV, "https://m.example/debian/",
                DebianMirrors.SECURITY_ENV, "https://s.example/sec"), etcApt);
        assertEquals("https://m.example/debian", both.archive().toString());
        assertEquals("https://s.example/sec", both.base("bookworm-security").toString());
        assertEquals("https://m.example/debian", both.base("trixie").toString());

        DebianMirrors derived = DebianMirrors.resolve(Map.of(DebianMirrors.ARCHIVE_ENV, "file:///srv/debian"),
                tmp.resolve("none"));
        assertEquals("file:///srv/debian-security", derived.security().toString());

        MirrorConfigurationException underivable = assertThrows(MirrorConfigurationException.class,
                () -> DebianMirrors.resolve(Map.of(DebianMirrors.ARCHIVE_ENV, "https://m.example/mirror"),
                        tmp.resolve("none")));
        assertTrue(underivable.getMessage().contains(DebianMirrors.SECURITY_ENV), underivable.getMessage());

        MirrorConfigurationException scheme = assertThrows(MirrorConfigurationException.class,
                () -> DebianMirrors.resolve(Map.of(DebianMirrors.ARCHIVE_ENV, "mirror+http://m.example/list",
                        DebianMirrors.SECURITY_ENV, "https://s.example/sec"), etcApt));
        assertTrue(scheme.getMessage().contains(DebianMirrors.ARCHIVE_ENV), scheme.getMessage());
    }

    static Map<String, String> env(LoopbackMirror mirror) {
        return Map.of(DebianMirrors.ARCHIVE_ENV, mirror.url("debian"),
                DebianMirrors.SECURITY_ENV, mirror.url("debian-security"));
    }

    static Entry entry(String name, String suite, String pool, Path deb) throws Exception {
        return new Entry(name, Role.LIBRARY, suite, name.equals("synth-sec") ? "2" : "1", "all", pool,
                Files.size(deb), Sha256.of(deb));
    }

    private static void assertCacheHoldsNoPackage(Path cache) throws Exception {
        Path debs = cache.resolve("debs");
        if (Files.isDirectory(debs)) {
            try (Stream<Path> s = Files.list(debs)) {
                assertEquals(List.of(), s.toList(), "nothing partial or unverified in the cache");
            }
        }
        Path extracted = cache.resolve("extracted");
        if (Files.isDirectory(extracted)) {
            try (Stream<Path> s = Files.list(extracted)) {
                assertEquals(List.of(), s.toList());
            }
        }
    }
}
