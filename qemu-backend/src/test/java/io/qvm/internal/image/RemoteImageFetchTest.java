package io.qvm.internal.image;

import io.qvm.ImageFetchException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.ImageFetchException.Reason;
import io.qvm.internal.image.ImageResolver.Source;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The released image fetched from a remote Maven repository ({@link LoopbackMavenRepository}, a
 * real HTTP server on loopback serving a real image zip made by {@link TestImages}) and trusted
 * only against the pins of the backend's own version: a good fetch, tampered or oversized or cut
 * off bytes refused with nothing left behind, a version without pins refused before any request,
 * and the signature check still applying to what was fetched.
 */
@Tag("unit")
@Tag("security")
class RemoteImageFetchTest {

    private static final String VERSION = "1.2.3";

    @TempDir
    Path tmp;

    private Path cache;
    private Path zip;
    private LoopbackMavenRepository remote;

    @BeforeEach
    void release() throws IOException {
        cache = tmp.resolve("cache");
        remote = new LoopbackMavenRepository(tmp.resolve("served"));
        Path src = TestImages.write(tmp.resolve("src").resolve("x86_64"), Arch.X86_64, "released");
        zip = TestImages.zip(remote.root().resolve("io/qvm/qvm-image/1.2.3/qvm-image-1.2.3-x86_64.zip"),
                TestImages.entries(src));
    }

    @AfterEach
    void stop() {
        remote.close();
    }

    private PinnedImages pinsOf(Path pinned) throws IOException {
        return new PinnedImages(VERSION, Map.of(Arch.X86_64, new PinnedImages.Pin(Sha256.of(pinned), Files.size(pinned))),
                "a test's pins");
    }

    private ImageResolver.Builder resolver(Optional<PinnedImages> pins, boolean viaEnvironment) {
        Map<String, String> env = viaEnvironment
                ? Map.of(QvmEnvironment.CACHE, cache.toString(), RemoteImageRepository.ENV, remote.url().toString())
                : Map.of(QvmEnvironment.CACHE, cache.toString());
        ImageResolver.Builder b = ImageResolver.builder()
                .environment(QvmEnvironment.of(env, tmp.resolve("home").toString(), "Linux"))
                .mavenRepository(new LocalMavenRepository(tmp.resolve("m2"), "a test's")).version(VERSION).pins(pins);
        return viaEnvironment ? b : b.remoteRepository(remote.url());
    }

    private Path fetched() {
        return cache.resolve("images-remote").resolve("qvm-image-1.2.3-x86_64.zip");
    }

    /** Everything in {@code <cache>/images-remote} and the unpack cache: what a failed fetch must not leave. */
    private List<String> leftBehind() throws IOException {
        List<String> out = new java.util.ArrayList<>();
        for (Path d : List.of(cache.resolve("images-remote"), cache.resolve("images-maven"))) {
            if (Files.isDirectory(d)) {
                try (Stream<Path> s = Files.walk(d)) {
                    s.filter(p -> !p.equals(d)).forEach(p -> out.add(cache.relativize(p).toString()));
                }
            }
        }
        return out;
    }

    @Test
    void aPinnedImageIsFetchedOnceIntoTheUserCacheAndUnpacked() throws IOException {
        ImageResolver.Resolved r = resolver(Optional.of(pinsOf(zip)), true).build().resolve(Arch.X86_64);
        assertEquals(Source.REMOTE_REPOSITORY, r.source());
        assertEquals("kernel of released", Files.readString(r.image().kernel()));
        assertEquals(fetched(), r.artifact().orElseThrow());
        assertEquals(Sha256.of(zip), Sha256.of(fetched()));
        assertEquals(cache.resolve("images-maven").resolve(Sha256.of(zip)).resolve("x86_64"), r.dir());
        assertEquals(List.of("GET /repo/io/qvm/qvm-image/1.2.3/qvm-image-1.2.3-x86_64.zip 200 -"), remote.requests(),
                "one anonymous GET in the standard layout");

        ImageResolver.Resolved again = resolver(Optional.of(pinsOf(zip)), false).build().resolve(Arch.X86_64);
        assertEquals(r.dir(), again.dir());
        assertEquals(1, remote.requests().size(), "the fetched copy is used again, not fetched twice");
    }

    @Test
    void theRemoteRepositoryIsTheLastPlaceAndAnImageFoundBeforeItIsNeverFetched() throws IOException {
        TestImages.write(cache.resolve("images").resolve("x86_64"), Arch.X86_64, "cache");
        ImageResolver.Resolved r = resolver(Optional.of(pinsOf(zip)), true).build().resolve(Arch.X86_64);
        assertEquals(Source.USER_CACHE, r.source());
        assertEquals(List.of(), remote.requests());
    }

    @Test
    void tamperedBytesAreRefusedAndDeleted() throws IOException {
        PinnedImages pins = pinsOf(zip);
        byte[] bytes = Files.readAllBytes(zip);
        bytes[bytes.length / 2] ^= 0x01; // same length, one bit off
        Files.write(zip, bytes);

        ImageFetchException e = assertThrows(ImageFetchException.class,
                () -> resolver(Optional.of(pins), true).build().resolve(Arch.X86_64));
        assertEquals(Reason.MISMATCH, e.reason());
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        URI url = remote.url().resolve("io/qvm/qvm-image/1.2.3/qvm-image-1.2.3-x86_64.zip");
        assertTrue(e.getMessage().startsWith(url + " served " + bytes.length + " bytes with sha256 " + Sha256.of(zip)
                + ", but this backend pins " + bytes.length + " bytes with sha256 "
                + pins.pins().get(Arch.X86_64).sha256() + ": refused and deleted"), e.getMessage());
        assertEquals(List.of(), leftBehind(), "nothing of a refused download stays in the cache");
    }

    @Test
    void moreBytesThanPinnedAreCutOffAndRefused() throws IOException {
        PinnedImages pins = pinsOf(zip);
        Files.write(zip, new byte[(int) Files.size(zip) * 4], java.nio.file.StandardOpenOption.APPEND);
        ImageFetchException e = assertThrows(ImageFetchException.class,
                () -> resolver(Optional.of(pins), true).build().resolve(Arch.X86_64));
        assertEquals(Reason.MISMATCH, e.reason());
        assertTrue(e.getMessage().contains("serves more than the " + pins.pins().get(Arch.X86_64).size()
                + " bytes this backend pins: refused and deleted"), e.getMessage());
        assertEquals(List.of(), leftBehind());
    }

    @Test
    void aFetchedCopyModifiedLaterIsRefusedDeletedAndFetchedAgainNextTime() throws IOException {
        PinnedImages pins = pinsOf(zip);
        resolver(Optional.of(pins), true).build().resolve(Arch.X86_64);
        Path unpacked = cache.resolve("images-maven");
        io.qvm.protocol.util.FileTrees.delete(unpacked);
        byte[] bytes = Files.readAllBytes(fetched());
        bytes[10] ^= 0x01;
        Files.write(fetched(), bytes);

        ImageFetchException e = assertThrows(ImageFetchException.class,
                () -> resolver(Optional.of(pins), true).build().resolve(Arch.X86_64));
        assertEquals(Reason.MISMATCH, e.reason());
        assertTrue(e.getMessage().startsWith("the image fetched before, " + fetched() + ", is "), e.getMessage());
        assertTrue(e.getMessage().endsWith("(modified since it was fetched): refused and deleted; the next use fetches "
                + "it again from " + remote.url().resolve("io/qvm/qvm-image/1.2.3/qvm-image-1.2.3-x86_64.zip")),
                e.getMessage());
        assertFalse(Files.exists(fetched()));
        assertEquals(List.of(), leftBehind());

        assertEquals(Source.REMOTE_REPOSITORY, resolver(Optional.of(pins), true).build().resolve(Arch.X86_64).source(),
                "the fix the message names works");
    }

    @Test
    void aVersionWithoutPinsFetchesNothingAndSaysHowToBuildLocally() throws IOException {
        ImageFetchException e = assertThrows(ImageFetchException.class,
                () -> resolver(Optional.empty(), true).build().resolve(Arch.X86_64));
        assertEquals(Reason.NOT_PINNED, e.reason());
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().startsWith("this backend (version 1.2.3) pins no x86_64 image: its jar carries no "
                + PinnedImages.RESOURCE + ", so it fetches nothing from " + remote.url()), e.getMessage());
        assertTrue(e.getMessage().contains("./qvm image build --arch x86_64 --out " + cache.resolve("images")),
                e.getMessage());

        PinnedImages otherVersion = new PinnedImages("1.2.2", pinsOf(zip).pins(), "a test's pins");
        e = assertThrows(ImageFetchException.class,
                () -> resolver(Optional.of(otherVersion), true).build().resolve(Arch.X86_64));
        assertEquals(Reason.NOT_PINNED, e.reason());
        assertTrue(e.getMessage().contains("a test's pins are for version 1.2.2 ([x86_64])"), e.getMessage());

        PinnedImages otherArch = new PinnedImages(VERSION, Map.of(Arch.AARCH64, pinsOf(zip).pins().get(Arch.X86_64)),
                "a test's pins");
        assertEquals(Reason.NOT_PINNED, assertThrows(ImageFetchException.class,
                () -> resolver(Optional.of(otherArch), true).build().resolve(Arch.X86_64)).reason());

        assertEquals(List.of(), remote.requests(), "fail closed: not even a request without a pin");
        assertEquals(List.of(), leftBehind());
    }

    @Test
    void aDownloadCutOffLeavesNoPartialFile() throws IOException {
        remote.cutOffAfter(Files.size(zip) / 2);
        ImageFetchException e = assertThrows(ImageFetchException.class,
                () -> resolver(Optional.of(pinsOf(zip)), true).build().resolve(Arch.X86_64));
        assertTrue(e.reason() == Reason.UNAVAILABLE || e.reason() == Reason.MISMATCH, e.reason() + ": " + e.getMessage());
        assertEquals(List.of(), leftBehind(), "no .part file, no zip, nothing unpacked");
    }

    @Test
    void aStatusOtherThan200IsUnavailableWithTheUrlAndStatus() throws IOException {
        PinnedImages pins = pinsOf(zip);
        Files.delete(zip);
        ImageFetchException e = assertThrows(ImageFetchException.class,
                () -> resolver(Optional.of(pins), true).build().resolve(Arch.X86_64));
        assertEquals(Reason.UNAVAILABLE, e.reason());
        assertTrue(e.getMessage().startsWith("the image repository answered HTTP 404 for " + remote.url()
                + "io/qvm/qvm-image/1.2.3/qvm-image-1.2.3-x86_64.zip: this release's image was not deployed there"),
                e.getMessage());

        remote.fail(".zip", 503);
        e = assertThrows(ImageFetchException.class, () -> resolver(Optional.of(pins), true).build().resolve(Arch.X86_64));
        assertTrue(e.getMessage().startsWith("the image repository answered HTTP 503 for "), e.getMessage());
        assertEquals(List.of(), leftBehind());
    }

    @Test
    void anUnreachableRepositoryIsUnavailableAndLeavesNothing() throws IOException {
        PinnedImages pins = pinsOf(zip);
        URI url = remote.url();
        remote.close();
        ImageFetchException e = assertThrows(ImageFetchException.class, () -> ImageResolver.builder()
                .environment(QvmEnvironment.of(Map.of(QvmEnvironment.CACHE, cache.toString()),
                        tmp.resolve("home").toString(), "Linux"))
                .mavenRepository(new LocalMavenRepository(tmp.resolve("m2"), "a test's")).version(VERSION)
                .pins(Optional.of(pins)).remoteRepository(url).build().resolve(Arch.X86_64));
        assertEquals(Reason.UNAVAILABLE, e.reason());
        assertTrue(e.getMessage().startsWith("cannot fetch " + url + "io/qvm/qvm-image/1.2.3/"), e.getMessage());
        assertEquals(List.of(), leftBehind());
    }

    @Test
    void aBadRepositoryVariableIsATypedErrorNamingIt() {
        ImageFetchException e = assertThrows(ImageFetchException.class, () -> ImageResolver.builder()
                .environment(QvmEnvironment.of(Map.of(QvmEnvironment.CACHE, cache.toString(), RemoteImageRepository.ENV,
                        "ftp://mirror.example/qvm"), tmp.toString(), "Linux"))
                .mavenRepository(new LocalMavenRepository(tmp.resolve("m2"), "a test's")).version(VERSION)
                .pins(Optional.empty()).build().resolve(Arch.X86_64));
        assertTrue(e.getMessage().startsWith("$QVM_IMAGE_REPOSITORY is not an image repository URL"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> ImageResolver.builder().remoteRepository(URI.create("https://user:secret@repo.example/")));
    }

    @Test
    void theSignatureCheckStillAppliesToAFetchedImage() throws IOException {
        TestKeys.Key release = TestKeys.generate("qvm release <release@qvm.test>", "correct horse");
        TestKeys.Key other = TestKeys.generate("someone else <else@qvm.test>", "battery staple");
        Path src = tmp.resolve("src").resolve("x86_64");
        Files.writeString(src.resolve(ImageSignature.FILE),
                release.sign(Files.readAllBytes(src.resolve(ImageDirectory.SHA256SUMS))));
        Map<String, byte[]> entries = TestImages.entries(src);
        entries.put(ImageSignature.FILE, Files.readAllBytes(src.resolve(ImageSignature.FILE)));
        TestImages.zip(zip, entries);

        GuestImage image = resolver(Optional.of(pinsOf(zip)), true).build().resolve(Arch.X86_64).image();
        ImageSignature.trusting(release.writePublic(tmp.resolve("release.asc"))).check(image);
        HostSetupException e = assertThrows(HostSetupException.class,
                () -> ImageSignature.trusting(other.writePublic(tmp.resolve("other.asc"))).check(image),
                "a pinned image signed by a key the server does not trust is still refused");
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
    }

    @Test
    void pinsRoundTripAndAMalformedFileIsRefused() {
        PinnedImages pins = new PinnedImages(VERSION, Map.of(Arch.AARCH64, new PinnedImages.Pin("b".repeat(64), 7),
                Arch.X86_64, new PinnedImages.Pin("a".repeat(64), 9)), "mine");
        String text = pins.format();
        assertTrue(text.contains("version=1.2.3\nx86_64.sha256=" + "a".repeat(64) + "\nx86_64.size=9\naarch64.sha256="),
                text);
        assertEquals(pins.pins(), PinnedImages.parse(text, "again").pins());
        assertEquals(Optional.empty(), pins.pin("1.2.4", Arch.X86_64));

        for (String bad : List.of("x86_64.sha256=" + "a".repeat(64) + "\nx86_64.size=1\n",
                "version=1.2.3\nx86_64.sha256=" + "A".repeat(64) + "\nx86_64.size=1\n",
                "version=1.2.3\nx86_64.sha256=" + "a".repeat(64) + "\n",
                "version=1.2.3\nriscv64.sha256=" + "a".repeat(64) + "\nriscv64.size=1\n",
                "version=../1\n")) {
            assertThrows(IllegalStateException.class, () -> PinnedImages.parse(bad, "bad"), bad);
        }
        assertEquals(Optional.empty(), PinnedImages.fromClassPath(new ClassLoader(null) { }),
                "no resource: no pins");
    }
}
