package io.qvm.internal.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A configured public key makes the backend require the release's signature on an image's
 * SHA256SUMS: a good one passes; sums changed after signing, another key's signature, no signature
 * or a file that is not one are refused with IMAGE_INVALID saying what to do. Keys are throwaway
 * Ed25519 keys made in-process.
 */
@Tag("unit")
@Tag("security")
class ImageSignatureTest {

    static TestKeys.Key release;
    static TestKeys.Key other;

    @TempDir
    Path tmp;

    @BeforeAll
    static void keys() {
        release = TestKeys.generate("qvm release <release@qvm.test>", "correct horse");
        other = TestKeys.generate("someone else <else@qvm.test>", "battery staple");
    }

    GuestImage image(String tag) throws IOException {
        Path dir = TestImages.write(tmp.resolve(tag).resolve("x86_64"), Arch.X86_64, tag);
        return GuestImage.verify(dir, Arch.X86_64, "test");
    }

    ImageSignature trusting(TestKeys.Key k) throws IOException {
        return ImageSignature.trusting(k.writePublic(Files.createTempFile(tmp, "key-", ".asc")));
    }

    static void sign(GuestImage img, TestKeys.Key k) throws IOException {
        Files.writeString(img.dir().resolve(ImageSignature.FILE),
                k.sign(Files.readAllBytes(img.dir().resolve(ImageDirectory.SHA256SUMS))));
    }

    @Test
    void anImageSignedByTheConfiguredKeyPasses() throws IOException {
        GuestImage img = image("good");
        sign(img, release);
        trusting(release).check(img);
    }

    @Test
    void sumsChangedAfterSigningAreRefused() throws IOException {
        GuestImage img = image("tampered");
        sign(img, release);
        Files.writeString(img.dir().resolve(ImageDirectory.INITRAMFS), "another initramfs");
        TestImages.sums(img.dir());
        HostSetupException e = assertThrows(HostSetupException.class, () -> trusting(release).check(img));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().contains("does not match") && e.getMessage().contains("changed after"),
                e.getMessage());
    }

    @Test
    void anotherKeysSignatureIsRefused() throws IOException {
        GuestImage img = image("other");
        sign(img, other);
        HostSetupException e = assertThrows(HostSetupException.class, () -> trusting(release).check(img));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().contains("not by a trusted key"), e.getMessage());
        assertTrue(e.getMessage().contains(trusting(release).fingerprints().get(0)), "names the key it wants: "
                + e.getMessage());
    }

    @Test
    void anUnsignedImageIsRefusedWhenAKeyIsConfiguredAndSaysWhatToDo() throws IOException {
        GuestImage img = image("unsigned");
        HostSetupException e = assertThrows(HostSetupException.class, () -> trusting(release).check(img));
        assertEquals(HostSetupException.Problem.IMAGE_INVALID, e.problem());
        assertTrue(e.getMessage().contains("is not signed") && e.getMessage().contains("--signing-key"),
                e.getMessage());
    }

    @Test
    void aSignatureFileThatIsNoSignatureIsRefused() throws IOException {
        GuestImage img = image("garbage");
        Files.writeString(img.dir().resolve(ImageSignature.FILE), "-----BEGIN PGP SIGNATURE-----\n\nnope\n");
        HostSetupException e = assertThrows(HostSetupException.class, () -> trusting(release).check(img));
        assertTrue(e.getMessage().contains("holds no OpenPGP signature"), e.getMessage());
    }

    @Test
    void theKeyComesFromTheBuilderElseTheEnvironmentElseNoneIsRequired() throws IOException {
        Path key = release.writePublic(tmp.resolve("release.asc"));
        QvmEnvironment none = QvmEnvironment.of(Map.of());
        assertTrue(ImageSignature.configured(null, none).isEmpty());
        assertEquals(trusting(release).fingerprints(),
                ImageSignature.configured(null, QvmEnvironment.of(Map.of(ImageSignature.ENV, key.toString())))
                        .orElseThrow().fingerprints());
        assertEquals(trusting(release).fingerprints(), ImageSignature.configured(key, none).orElseThrow().fingerprints());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> ImageSignature.trusting(Files.writeString(tmp.resolve("not-a-key"), "hello")));
        assertTrue(bad.getMessage().contains("public key"), bad.getMessage());
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> ImageSignature.trusting(tmp.resolve("absent.asc")));
        assertTrue(missing.getMessage().contains("does not exist"), missing.getMessage());
    }
}
