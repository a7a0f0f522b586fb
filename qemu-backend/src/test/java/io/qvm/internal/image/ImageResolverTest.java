package io.qvm.internal.image;

import io.qvm.ImageNotFoundException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.host.QvmVersion;
import io.qvm.internal.image.ImageResolver.Source;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The order the backend looks for its image in (explicit, {@code $QVM_IMAGE_DIR}, the user cache,
 * the local Maven repository), each place shadowing the next, and the rule that an image that is
 * there but fails its checksums is refused wherever it is, never skipped for one further down.
 * Real files: each place holds a small image of its own (its files say which).
 */
@Tag("unit")
@Tag("security")
class ImageResolverTest {

    private static final String VERSION = "1.2.3";

    @TempDir
    Path tmp;

    private Path explicit;
    private Path envDir;
    private Path cache;
    private Path repo;

    @BeforeEach
    void places() {
        explicit = tmp.resolve("explicit");
        envDir = tmp.resolve("env-images");
        cache = tmp.resolve("cache");
        repo = tmp.resolve("m2");
    }

    /** An image in every place, each saying where it is. */
    private void fillEveryPlace() throws IOException {
        TestImages.write(explicit.resolve("x86_64"), Arch.X86_64, "explicit");
        TestImages.write(envDir.resolve("x86_64"), Arch.X86_64, "env");
        TestImages.write(cache.resolve("images").resolve("x86_64"), Arch.X86_64, "cache");
        installInRepo("maven");
    }

    private Path installInRepo(String tag) throws IOException {
        Path src = TestImages.write(tmp.resolve("src-" + tag).resolve("x86_64"), Arch.X86_64, tag);
        return TestImages.install(repo, VERSION, Arch.X86_64, TestImages.entries(src));
    }

    private ImageResolver.Builder resolver(boolean withEnvDir) {
        Map<String, String> env = new HashMap<>();
        env.put(QvmEnvironment.CACHE, cache.toString());
        if (withEnvDir) {
            env.put(QvmEnvironment.IMAGE_DIR, envDir.toString());
        }
        return ImageResolver.builder().environment(QvmEnvironment.of(env, tmp.resolve("home").toString(), "Linux"))
                .mavenRepository(new LocalMavenRepository(repo, "a test's")).version(VERSION);
    }

    private static String kernelOf(ImageResolver.Resolved r) throws IOException {
        return Files.readString(r.image().kernel());
    }

    @Test
    void eachPlaceShadowsTheNextAndTheExplicitDirectoryWins() throws IOException {
        fillEveryPlace();
        ImageResolver.Resolved r = resolver(true).imageDir(explicit).build().resolve(Arch.X86_64);
        assertEquals(Source.EXPLICIT, r.source());
        assertEquals(explicit.resolve("x86_64"), r.dir());
        assertEquals("kernel of explicit", kernelOf(r));

        r = resolver(true).build().resolve(Arch.X86_64);
        assertEquals(Source.ENVIRONMENT, r.source());
        assertEquals("kernel of env", kernelOf(r));

        r = resolver(false).build().resolve(Arch.X86_64);
        assertEquals(Source.USER_CACHE, r.source());
        assertEquals(cache.resolve("images").resolve("x86_64"), r.dir());
        assertEquals("kernel of cache", kernelOf(r));
        assertTrue(r.artifact().isEmpty());
    }

    @Test
    void theMavenRepositoryIsUsedOnlyWhenTheOtherPlacesAreEmpty() throws IOException {
        Path zip = installInRepo("maven");
        ImageResolver.Resolved r = resolver(false).build().resolve(Arch.X86_64);
        assertEquals(Source.MAVEN_REPOSITORY, r.source());
        assertEquals("kernel of maven", kernelOf(r));
        assertEquals(repo.resolve("io/qvm/qvm-image/1.2.3/qvm-image-1.2.3-x86_64.zip"), zip);
        assertEquals(zip, r.artifact().orElseThrow());
        assertEquals(cache.resolve("images-maven").resolve(Sha256.of(zip)).resolve("x86_64"), r.dir(),
                "unpacked into the user cache, under the zip's hash");
        assertTrue(r.files().contains(zip), "the zip is among the files the image rests on: " + r.files());
        assertEquals("x86_64 image from the local Maven repository: " + zip + ", unpacked in " + r.dir(), r.describe());
    }

    @Test
    void theArtifactLookedForIsOfTheBackendsOwnVersion() throws IOException {
        String own = QvmVersion.current().orElseThrow(() -> new AssertionError("no version resource"));
        assertEquals(System.getProperty("qvm.project.version"), own, "the filtered resource holds the pom's version");
        Path src = TestImages.write(tmp.resolve("src").resolve("x86_64"), Arch.X86_64, "own");
        TestImages.install(repo, "0.0.1-other", Arch.X86_64, TestImages.entries(src));
        ImageResolver.Builder noVersion = ImageResolver.builder().environment(QvmEnvironment.of(
                Map.of(QvmEnvironment.CACHE, cache.toString()), tmp.toString(), "Linux"))
                .mavenRepository(new LocalMavenRepository(repo, "a test's"));

        ImageNotFoundException e = assertThrows(ImageNotFoundException.class, () -> noVersion.build().resolve(Arch.X86_64),
                "an artifact of another version is not this backend's image");
        assertTrue(e.getMessage().contains(repo.resolve("io/qvm/qvm-image/" + own + "/qvm-image-" + own + "-x86_64.zip")
                + " is not there"), e.getMessage());

        Path zip = TestImages.install(repo, own, Arch.X86_64, TestImages.entries(src));
        assertEquals(zip, noVersion.build().resolve(Arch.X86_64).artifact().orElseThrow());
    }

    @Test
    void aNamedPlaceWithoutAnImageIsTheOnlyPlaceSearched() throws IOException {
        TestImages.write(cache.resolve("images").resolve("x86_64"), Arch.X86_64, "cache");
        installInRepo("maven");
        Files.createDirectories(explicit);
        ImageNotFoundException e = assertThrows(ImageNotFoundException.class,
                () -> resolver(true).imageDir(explicit).build().resolve(Arch.X86_64));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertEquals(labels(Source.EXPLICIT), e.searched().stream().map(ImageNotFoundException.SearchedPlace::place).toList());
        assertEquals("no guest image for x86_64 at " + explicit.resolve("x86_64") + " (the backend's image directory is "
                + "set, so it is the only place searched). Build it with: ./qvm image build --arch x86_64 --out "
                + explicit, e.getMessage());

        e = assertThrows(ImageNotFoundException.class, () -> resolver(true).build().resolve(Arch.X86_64));
        assertEquals(labels(Source.EXPLICIT, Source.ENVIRONMENT), e.searched().stream().map(ImageNotFoundException.SearchedPlace::place)
                .toList());
        assertTrue(e.getMessage().contains("$QVM_IMAGE_DIR is set, so it is the only place searched: unset it to let "
                + "the backend search the user cache and the local Maven repository"), e.getMessage());
    }

    @Test
    void nothingAnywhereListsEveryPlaceInOrderAndTheFixes() {
        ImageNotFoundException e = assertThrows(ImageNotFoundException.class,
                () -> resolver(false).build().resolve(Arch.AARCH64));
        assertEquals(Arch.AARCH64, e.arch());
        assertEquals(labels(Source.EXPLICIT, Source.ENVIRONMENT, Source.USER_CACHE, Source.MAVEN_REPOSITORY,
                Source.REMOTE_REPOSITORY),
                e.searched().stream().map(ImageNotFoundException.SearchedPlace::place).toList());
        Path zip = repo.resolve("io/qvm/qvm-image/1.2.3/qvm-image-1.2.3-aarch64.zip");
        assertEquals("no guest image for aarch64 in any place the backend looks; searched, in order:\n"
                + "  1. the backend's image directory: not given\n"
                + "  2. $QVM_IMAGE_DIR: not set\n"
                + "  3. the user cache " + cache.resolve("images/aarch64") + ": no such directory\n"
                + "  4. the local Maven repository " + repo + " (a test's): " + zip + " is not there\n"
                + "  5. the remote image repository: not set ($QVM_IMAGE_REPOSITORY)\n"
                + "Fix: make the server depend on io.qvm:qvm-image:1.2.3:zip:aarch64 (Maven puts it into the local "
                + "repository, where the backend finds it); or build one into the user cache in a qvm checkout: "
                + "./qvm image build --arch aarch64 --out " + cache.resolve("images") + "; or point QVM_IMAGE_DIR at "
                + "an image root; or, with a released backend (whose jar pins its image), set $QVM_IMAGE_REPOSITORY to the "
                + "Maven repository the release was deployed to.", e.getMessage());
    }

    @Test
    void aMismatchedChecksumIsRefusedInEveryPlaceNeverSkippedForTheNext() throws IOException {
        fillEveryPlace();
        for (Path dir : List.of(explicit.resolve("x86_64"), envDir.resolve("x86_64"),
                cache.resolve("images").resolve("x86_64"))) {
            Files.writeString(dir.resolve("initramfs.cpio.lz4"), "initramfs, patched");
        }
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> resolver(true).imageDir(explicit).build().resolve(Arch.X86_64));
        assertRefused(e, explicit.resolve("x86_64/initramfs.cpio.lz4"), "./qvm image build --arch x86_64 --out " + explicit);

        e = assertThrows(HostSetupException.class, () -> resolver(true).build().resolve(Arch.X86_64));
        assertRefused(e, envDir.resolve("x86_64/initramfs.cpio.lz4"), "--out " + envDir);

        e = assertThrows(HostSetupException.class, () -> resolver(false).build().resolve(Arch.X86_64),
                "the repository's sound image does not stand in for a damaged cache");
        assertRefused(e, cache.resolve("images/x86_64/initramfs.cpio.lz4"), "or remove " + cache.resolve("images/x86_64"));

        deleteTree(cache.resolve("images"));
        Path src = tmp.resolve("src-maven").resolve("x86_64");
        Map<String, byte[]> entries = TestImages.entries(src);
        entries.put("initramfs.cpio.lz4", "initramfs, patched".getBytes(StandardCharsets.UTF_8));
        Path zip = TestImages.install(repo, VERSION, Arch.X86_64, entries);
        e = assertThrows(HostSetupException.class, () -> resolver(false).build().resolve(Arch.X86_64));
        assertRefused(e, Path.of(zip + "!/initramfs.cpio.lz4"), "delete " + zip + " and let Maven fetch "
                + "io.qvm:qvm-image:1.2.3:zip:x86_64 again");
        assertTrue(e.getMessage().contains("The image artifact is damaged or was modified"), e.getMessage());
        assertEquals(List.of(), entries(cache.resolve("images-maven")), "a damaged zip leaves nothing in the cache");
    }

    private static void assertRefused(HostSetupException e, Path file, String fix) {
        assertFalse(e instanceof ImageNotFoundException, "a damaged image is not a missing one: " + e.getMessage());
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().startsWith("checksum mismatch for " + file + ": SHA256SUMS says "), e.getMessage());
        assertTrue(e.getMessage().contains(fix), e.getMessage());
    }

    @Test
    void anUnpackedImageModifiedAfterwardsIsRefusedNotReplaced() throws IOException {
        installInRepo("maven");
        ImageResolver.Resolved first = resolver(false).build().resolve(Arch.X86_64);
        Path initrd = first.image().initrd();
        var unpackedAt = Files.getLastModifiedTime(initrd);
        ImageResolver.Resolved again = resolver(false).build().resolve(Arch.X86_64);
        assertEquals(first.dir(), again.dir());
        assertEquals(unpackedAt, Files.getLastModifiedTime(initrd), "a sound copy is used as it is, not unpacked again");

        Files.writeString(initrd, "initramfs, patched");
        HostSetupException e = assertThrows(HostSetupException.class, () -> resolver(false).build().resolve(Arch.X86_64));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().startsWith("checksum mismatch for " + initrd), e.getMessage());
        assertTrue(e.getMessage().endsWith("It was modified after it was unpacked from " + first.artifact().orElseThrow()
                + ". Remove " + first.dir().getParent() + "; the next start unpacks the artifact again"), e.getMessage());

        TestImages.sums(first.dir()); // a consistent forgery: files and SHA256SUMS rewritten together
        e = assertThrows(HostSetupException.class, () -> resolver(false).build().resolve(Arch.X86_64));
        assertTrue(e.getMessage().startsWith("the image at " + first.dir() + " does not match the artifact "
                + first.artifact().orElseThrow() + " it was unpacked from"), e.getMessage());

        deleteTree(first.dir().getParent());
        assertEquals("kernel of maven", kernelOf(resolver(false).build().resolve(Arch.X86_64)),
                "the fix the message gives works");
    }

    @Test
    void aNewArtifactIsUnpackedAfreshUnderItsOwnHash() throws IOException {
        Path zip = installInRepo("first");
        ImageResolver.Resolved first = resolver(false).build().resolve(Arch.X86_64);
        installInRepo("second"); // a new SNAPSHOT installed over the old one
        ImageResolver.Resolved second = resolver(false).build().resolve(Arch.X86_64);
        assertNotEquals(first.dir(), second.dir());
        assertEquals(cache.resolve("images-maven").resolve(Sha256.of(zip)).resolve("x86_64"), second.dir());
        assertEquals("kernel of second", kernelOf(second));
    }

    @Test
    void anImageForAnotherArchitectureIsRefused() throws IOException {
        Path src = TestImages.write(tmp.resolve("src").resolve("x86_64"), Arch.X86_64, "x86");
        TestImages.install(repo, VERSION, Arch.AARCH64, TestImages.entries(src)); // installed under the wrong classifier
        HostSetupException e = assertThrows(HostSetupException.class, () -> resolver(false).build().resolve(Arch.AARCH64));
        assertInstanceOf(HostSetupException.class, e);
        assertFalse(e instanceof ImageNotFoundException);
        assertTrue(e.getMessage().contains("is for x86_64, not aarch64"), e.getMessage());
    }

    static List<Path> entries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    static void deleteTree(Path root) throws IOException {
        try (Stream<Path> all = Files.walk(root)) {
            for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    private static List<String> labels(Source... sources) {
        return java.util.Arrays.stream(sources).map(Source::label).toList();
    }
}
