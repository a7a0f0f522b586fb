package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.qvm.image.PackageLock.Entry;
import io.qvm.image.PackageLock.Role;
import io.qvm.protocol.image.Arch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The pure-Java extraction against {@code dpkg-deb -x} (installed on this Debian host; the
 * comparison is what proves the extractor, so it needs it) and against hostile archives.
 */
@Tag("unit")
@Tag("security")
class DebArchiveTest {
    /** Cached real packages up to this size are compared by default; -Dqvm.image.compareAllDebs=true for all. */
    private static final long DEFAULT_COMPARE_LIMIT = 3_000_000;

    @Test
    void syntheticPackageExtractsExactlyAsDpkgDebDoes(@TempDir Path tmp) throws Exception {
        Path deb = everyKind().write(tmp.resolve("every-kind.deb"));
        assertSameAsDpkgDeb(deb, tmp, "synthetic 1 (all)");
    }

    @Test
    void cachedPinnedPackagesExtractExactlyAsDpkgDebDoes(@TempDir Path tmp) throws Exception {
        boolean all = Boolean.getBoolean("qvm.image.compareAllDebs");
        List<Entry> compared = new ArrayList<>();
        for (Entry e : PackageLock.bundled().entries(Arch.X86_64)) {
            Path deb = PackageStore.defaultCache().resolve("debs").resolve(e.sha256() + ".deb");
            if (Files.isRegularFile(deb) && (all || Files.size(deb) <= DEFAULT_COMPARE_LIMIT)) {
                Path work = Files.createDirectories(tmp.resolve(e.name()));
                assertSameAsDpkgDeb(deb, work, e.label());
                compared.add(e);
            }
        }
        // The synthetic test above covers every entry kind; this one proves real packages when
        // the host has built an image before (it has here: ~/.cache/qvm/debs).
        assumeTrue(!compared.isEmpty(), "no pinned package in the cache " + PackageStore.defaultCache());
    }

    @Test
    void gzipAndUncompressedDataMembersAreReadToo(@TempDir Path tmp) throws Exception {
        for (String member : List.of("data.tar.gz", "data.tar")) {
            Path deb = everyKind().dataMember(member).write(tmp.resolve(member + ".deb"));
            Path work = Files.createDirectories(tmp.resolve(member));
            assertSameAsDpkgDeb(deb, work, "synthetic 1 (" + member + ")");
        }
    }

    @Test
    void zstdIsRefusedNamingThePackage(@TempDir Path tmp) throws Exception {
        Path deb = new SyntheticDeb().file("./a", 0644, "x").dataMember("data.tar.zst")
                .write(tmp.resolve("z.deb"));
        Path into = Files.createDirectories(tmp.resolve("into"));
        UnsupportedPackageException e = assertThrows(UnsupportedPackageException.class,
                () -> DebArchive.extract(deb, into, "libzstd-user 1.0 (amd64)"));
        assertTrue(e.getMessage().contains("libzstd-user 1.0 (amd64)"), e.getMessage());
        assertTrue(e.getMessage().contains("data.tar.zst"), e.getMessage());
    }

    @Test
    void notADebIsRefused(@TempDir Path tmp) throws Exception {
        Path deb = Files.writeString(tmp.resolve("x.deb"), "!<arch>\n");
        Path into = Files.createDirectories(tmp.resolve("into"));
        assertThrows(UnsupportedPackageException.class, () -> DebArchive.extract(deb, into, "x 1 (all)"));
    }

    static Stream<Arguments> hostile() {
        return Stream.of(
                Arguments.of("dot-dot name", (Consumer<SyntheticDeb>) d -> d.file("./../escaped", 0644, "x")),
                Arguments.of("deep dot-dot name", (Consumer<SyntheticDeb>) d ->
                        d.dir("./usr", 0755).file("./usr/../../escaped", 0644, "x")),
                Arguments.of("absolute name", (Consumer<SyntheticDeb>) d -> d.file("/tmp/escaped", 0644, "x")),
                Arguments.of("symlink climbing out", (Consumer<SyntheticDeb>) d ->
                        d.dir("./usr", 0755).symlink("./usr/up", "../../escaped")),
                Arguments.of("file through a symlink", (Consumer<SyntheticDeb>) d ->
                        d.symlink("./lib", "/").file("./lib/escaped", 0644, "x")),
                Arguments.of("file through a relative symlink", (Consumer<SyntheticDeb>) d ->
                        d.symlink("./lib", ".").dir("./usr", 0755).symlink("./usr/x", "..")
                                .file("./usr/x/escaped", 0644, "x")),
                Arguments.of("hard link out", (Consumer<SyntheticDeb>) d ->
                        d.hardlink("./stolen", "../outside-secret")),
                Arguments.of("hard link to an absolute path", (Consumer<SyntheticDeb>) d ->
                        d.hardlink("./stolen", "/etc/hostname")),
                Arguments.of("hard link through a symlink", (Consumer<SyntheticDeb>) d ->
                        d.symlink("./up", "/").hardlink("./stolen", "./up/etc/hostname")),
                Arguments.of("fifo", (Consumer<SyntheticDeb>) d -> d.fifo("./pipe")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hostile")
    void hostileArchivesAreRefusedAndWriteNothingOutside(String what, Consumer<SyntheticDeb> shape,
            @TempDir Path tmp) throws Exception {
        Files.writeString(tmp.resolve("outside-secret"), "secret");
        SyntheticDeb d = new SyntheticDeb().dir("./", 0755);
        shape.accept(d);
        Path deb = d.write(tmp.resolve("pkgs/hostile.deb"));
        Path cache = tmp.resolve("cache");
        Entry pinned = new Entry("hostile", Role.LIBRARY, "bookworm", "1", "all",
                "pool/main/h/hostile/hostile_1_all.deb", Files.size(deb), Sha256.of(deb));
        Files.createDirectories(cache.resolve("debs"));
        Files.copy(deb, cache.resolve("debs").resolve(pinned.sha256() + ".deb"));
        PackageStore store = new PackageStore(cache, line -> { }, tmp.resolve("no-etc-apt"), Map.of());

        // Through the store's public API, as the build calls it: the hash matched, and still
        // the archive is refused and nothing of it stays (also no temporary directory).
        ImageException e = assertThrows(ImageException.class, () -> store.extracted(Arch.X86_64, pinned));
        assertInstanceOf(UnsafePackageException.class, e, e.getMessage());
        assertTrue(e.getMessage().contains("hostile 1 (all)"), e.getMessage());
        assertFalse(Files.exists(tmp.resolve("escaped")), "wrote outside the extraction directory");
        assertFalse(Files.exists(Path.of("/tmp/escaped")), "wrote to an absolute path");
        assertEquals("secret", Files.readString(tmp.resolve("outside-secret")));
        try (Stream<Path> s = Files.list(cache.resolve("extracted"))) {
            assertEquals(List.of(), s.toList(), "a refused package leaves nothing in the cache");
        }
    }

    @Test
    void symlinkTargetsAreJudgedByWhereTheyPoint() {
        assertTrue(DebArchive.staysInside("usr/lib/a", "../b"));
        assertTrue(DebArchive.staysInside("usr/lib/a", "../../b"));
        assertFalse(DebArchive.staysInside("usr/lib/a", "../../../b"));
        assertTrue(DebArchive.staysInside("lib64/ld.so", "/lib/x86_64-linux-gnu/ld.so"));
        assertFalse(DebArchive.staysInside("a", ".."));
    }

    /** Every entry kind the pinned packages use, with modes dpkg-deb keeps. */
    private static SyntheticDeb everyKind() {
        return new SyntheticDeb()
                .dir("./", 0755)
                .dir("./usr", 0755)
                .dir("./usr/bin", 0755)
                .file("./usr/bin/tool", 0755, "#!/bin/sh\necho tool\n")
                .file("./usr/bin/suid-tool", 04755, "setuid\n")
                .file("./usr/bin/sgid-tool", 02755, "setgid\n")
                .hardlink("./usr/bin/tool-alias", "./usr/bin/tool")
                .dir("./usr/lib", 0755)
                .dir("./usr/lib/x86_64-linux-gnu", 0755)
                .file("./usr/lib/x86_64-linux-gnu/libfoo.so.1.2.3", 0644, "\u007fELF not really\n")
                .symlink("./usr/lib/x86_64-linux-gnu/libfoo.so.1", "libfoo.so.1.2.3")
                .dir("./lib64", 0755)
                .symlink("./lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
                .dir("./usr/share/doc/pkg", 0755)
                .symlink("./usr/share/doc/pkg/changelog", "../other/changelog")
                .dir("./etc/private", 0700)
                .file("./etc/private/key", 0600, "k")
                .dir("./usr/share/readonly", 0555)
                .file("./usr/share/readonly/" + "n".repeat(120), 0444, "long name")
                .dir("./var/tmp", 01777);
    }

    private static void assertSameAsDpkgDeb(Path deb, Path work, String label) throws Exception {
        assumeTrue(onPath("dpkg-deb"), "dpkg-deb is the reference; this host has none");
        Path ours = Files.createDirectories(work.resolve("ours"));
        Path theirs = Files.createDirectories(work.resolve("dpkg"));
        DebArchive.extract(deb, ours, label);
        Process p = new ProcessBuilder("dpkg-deb", "-x", deb.toString(), theirs.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "dpkg-deb -x " + deb + ": " + out);
        Map<String, String> want = TreeDescription.of(theirs);
        Map<String, String> have = TreeDescription.of(ours);
        assertEquals(want.keySet(), have.keySet(), label + ": the same paths");
        for (String k : want.keySet()) {
            assertEquals(want.get(k), have.get(k), label + ": " + k);
        }
    }

    private static boolean onPath(String tool) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String d : path.split(java.io.File.pathSeparator)) {
            if (Files.isExecutable(Path.of(d, tool))) {
                return true;
            }
        }
        return false;
    }
}
