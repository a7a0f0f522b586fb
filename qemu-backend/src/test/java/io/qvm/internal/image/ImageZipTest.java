package io.qvm.internal.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an image zip in the local Maven repository may do to the cache it is unpacked into:
 * nothing outside it (no zip-slip), nothing but the image's own files, nothing larger than an
 * image, nothing half-written that a second JVM could see.
 */
@Tag("unit")
@Tag("security")
class ImageZipTest {

    private static final String VERSION = "1.2.3";

    @TempDir
    Path tmp;

    private Path cache;
    private Path repo;
    private Map<String, byte[]> sound;

    @BeforeEach
    void image() throws IOException {
        cache = tmp.resolve("cache");
        repo = tmp.resolve("m2");
        sound = TestImages.entries(TestImages.write(tmp.resolve("src").resolve("x86_64"), Arch.X86_64, "zip"));
    }

    private ImageResolver.Builder resolver() {
        return ImageResolver.builder()
                .environment(QvmEnvironment.of(Map.of(QvmEnvironment.CACHE, cache.toString()), tmp.toString(), "Linux"))
                .mavenRepository(new LocalMavenRepository(repo, "a test's")).version(VERSION);
    }

    /** Installs {@code entries} and asserts the resolver refuses them with {@code problem}, leaving the cache empty. */
    private HostSetupException refused(Map<String, byte[]> entries, ImageResolver.Builder resolver, String problem)
            throws IOException {
        Path zip = TestImages.install(repo, VERSION, Arch.X86_64, entries);
        HostSetupException e = assertThrows(HostSetupException.class, () -> resolver.build().resolve(Arch.X86_64));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().contains(problem), e.getMessage());
        assertTrue(e.getMessage().contains(zip.toString()), "names the zip: " + e.getMessage());
        assertTrue(e.getMessage().endsWith("or install it again from a qvm release"), "says the fix: " + e.getMessage());
        assertEquals(List.of(), ImageResolverTest.entries(cache.resolve("images-maven")), "nothing left in the cache");
        return e;
    }

    private Map<String, byte[]> soundWith(String name, String content) {
        Map<String, byte[]> m = new LinkedHashMap<>(sound);
        m.put(name, content.getBytes(StandardCharsets.UTF_8));
        return m;
    }

    @Test
    void anEntryThatIsAPathIsRefusedAndNothingIsWrittenOutsideTheCache() throws IOException {
        for (String slip : List.of("../../escaped", "/tmp/absolute", "x86_64/vmlinuz", "..\\windows", "C:evil", "..")) {
            Map<String, byte[]> entries = new LinkedHashMap<>();
            entries.put(slip, "owned".getBytes(StandardCharsets.UTF_8)); // first, before any sound entry
            entries.putAll(sound);
            refused(entries, resolver(), "holds an entry with an unsafe name '" + slip + "'");
        }
        assertFalse(Files.exists(cache.getParent().resolve("escaped")));
        assertFalse(Files.exists(tmp.resolve("escaped")));
    }

    @Test
    void anEntryThatIsNoPartOfAnImageIsRefused() throws IOException {
        refused(soundWith("init.sh", "#!/bin/sh"), resolver(), "holds an unexpected entry 'init.sh' (an image zip holds "
                + "only vmlinuz, initramfs.cpio.lz4, manifest.json, SHA256SUMS and sbom.cdx.json, SHA256SUMS.asc)");
        Map<String, byte[]> noSums = new LinkedHashMap<>(sound);
        noSums.remove("SHA256SUMS");
        refused(noSums, resolver(), "lacks SHA256SUMS");
    }

    @Test
    void anEntryLargerThanTheCapIsRefusedAndSoAreEntriesLargerTogether() throws IOException {
        refused(soundWith("initramfs.cpio.lz4", "x".repeat(4096)), resolver().zipLimits(1024, 1 << 20),
                "entry initramfs.cpio.lz4 of the image artifact");
        // each entry under the cap, all of them above the total (counted on the bytes inflated)
        refused(soundWith("sbom.cdx.json", "y".repeat(900)), resolver().zipLimits(1000, 1000), "inflate to more than");
        assertTrue(resolver().zipLimits(1000, 4000).build().resolve(Arch.X86_64).dir().startsWith(cache),
                "the same zip within larger caps");
    }

    @Test
    void aFileThatIsNoZipIsRefused() throws IOException {
        Path zip = ImageArtifact.zip(new LocalMavenRepository(repo, "a test's"), VERSION, Arch.X86_64);
        Files.createDirectories(zip.getParent());
        Files.writeString(zip, "<html>404 Not Found</html>");
        HostSetupException e = assertThrows(HostSetupException.class, () -> resolver().build().resolve(Arch.X86_64));
        assertTrue(e.getMessage().startsWith("the image artifact " + zip + " is not a readable zip"), e.getMessage());
    }

    @Test
    void twoResolversUnpackingAtOnceYieldOneSoundDirectory() throws Exception {
        Path zip = TestImages.install(repo, VERSION, Arch.X86_64, sound);
        Path expected = cache.resolve("images-maven").resolve(Sha256.of(zip)).resolve("x86_64");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 10; round++) {
                CyclicBarrier together = new CyclicBarrier(2);
                List<Future<ImageResolver.Resolved>> both = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    ImageResolver r = resolver().build(); // one each, as two JVMs would have
                    both.add(pool.submit(() -> {
                        together.await(30, TimeUnit.SECONDS);
                        return r.resolve(Arch.X86_64);
                    }));
                }
                for (Future<ImageResolver.Resolved> f : both) {
                    assertEquals(expected, f.get(60, TimeUnit.SECONDS).dir());
                }
                assertEquals(List.of(expected.getParent()), ImageResolverTest.entries(cache.resolve("images-maven")),
                        "one directory, no unpack directory left behind (round " + round + ")");
                assertEquals(List.of(expected), ImageResolverTest.entries(expected.getParent()));
                assertTrue(io.qvm.protocol.image.ImageDirectory.verify(expected, Arch.X86_64).ok());
                ImageResolverTest.deleteTree(cache.resolve("images-maven"));
            }
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void aLeftoverOfADeadUnpackIsRemovedByTheNext() throws IOException {
        TestImages.install(repo, VERSION, Arch.X86_64, sound);
        // the cache root as the resolver makes it (private); a dead unpack's leftover in it
        PrivateDirectory.ensure(cache.resolve("images-maven"));
        Path leftover = Files.createDirectories(cache.resolve("images-maven").resolve(".unpack-123").resolve("x86_64"));
        Files.writeString(leftover.resolve("vmlinuz"), "half");
        Files.setLastModifiedTime(leftover.getParent(), java.nio.file.attribute.FileTime.fromMillis(0));
        Path fresh = Files.createDirectories(cache.resolve("images-maven").resolve(".unpack-456"));
        resolver().build().resolve(Arch.X86_64);
        assertFalse(Files.exists(leftover.getParent()), "an hour-old unpack directory is a dead process's");
        assertTrue(Files.exists(fresh), "a recent one may be another process's, still at work");
    }

    @Test
    void aSharedOrSymlinkedCacheRootIsRefusedAndLeftAsItWas() throws IOException {
        TestImages.install(repo, VERSION, Arch.X86_64, sound);
        Path root = Files.createDirectories(cache.resolve("images-maven"));
        Files.setPosixFilePermissions(root, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxr-x"));
        HostSetupException e = assertThrows(HostSetupException.class, () -> resolver().build().resolve(Arch.X86_64));
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED, e.problem());
        assertTrue(e.getMessage().contains(root.toString()) && e.getMessage().contains("rwxrwxr-x")
                && e.getMessage().contains("QVM_CACHE"), e.getMessage());
        assertEquals("rwxrwxr-x", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(root)),
                "never chmod-ed");
        assertEquals(List.of(), ImageResolverTest.entries(root), "nothing unpacked into it");

        Files.delete(root);
        Path elsewhere = PrivateDirectory.ensure(tmp.resolve("elsewhere"));
        Files.createSymbolicLink(root, elsewhere);
        assertEquals(HostSetupException.Problem.HOST_SETUP_NEEDED,
                assertThrows(HostSetupException.class, () -> resolver().build().resolve(Arch.X86_64)).problem());
        assertEquals(List.of(), ImageResolverTest.entries(elsewhere), "nothing unpacked through the link");
    }

    @Test
    void theCacheRootIsCreatedPrivate() throws IOException {
        TestImages.install(repo, VERSION, Arch.X86_64, sound);
        resolver().build().resolve(Arch.X86_64);
        assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(cache.resolve("images-maven"))));
    }

    @Test
    void unsafeNames() {
        for (String bad : List.of("", ".", "..", "a/b", "/a", "a\\b", "c:x", "a\0b")) {
            assertTrue(ImageZip.unsafe(bad), bad);
        }
        for (String good : List.of("vmlinuz", "sbom.cdx.json", "..hidden", "a..b")) {
            assertFalse(ImageZip.unsafe(good), good);
        }
    }
}
