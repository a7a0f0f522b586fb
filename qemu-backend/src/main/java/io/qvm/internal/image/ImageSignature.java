package io.qvm.internal.image;

import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import org.bouncycastle.openpgp.PGPException;
import org.bouncycastle.openpgp.PGPObjectFactory;
import org.bouncycastle.openpgp.PGPPublicKey;
import org.bouncycastle.openpgp.PGPPublicKeyRing;
import org.bouncycastle.openpgp.PGPPublicKeyRingCollection;
import org.bouncycastle.openpgp.PGPSignature;
import org.bouncycastle.openpgp.PGPSignatureList;
import org.bouncycastle.openpgp.PGPUtil;
import org.bouncycastle.openpgp.operator.bc.BcKeyFingerprintCalculator;
import org.bouncycastle.openpgp.operator.bc.BcPGPContentVerifierBuilderProvider;
import org.bouncycastle.util.encoders.Hex;

/**
 * The release's signature on a guest image: a detached OpenPGP signature ({@value #FILE}, ASCII
 * armoured, written by {@code qvm release --signing-key}) over the image's {@code SHA256SUMS},
 * checked with a public key the backend was given — {@code QemuVmBackend.builder().imageKey(path)}
 * or {@value #ENV} (an armoured public key file). {@code SHA256SUMS} pins every other file of the
 * image ({@code ImageDirectory.verify}, which runs first), so a good signature over it vouches for
 * the kernel, the initramfs and the manifest.
 *
 * <p>With no key configured nothing is required (an image built here with {@code qvm image build}
 * is unsigned). With one, an image without {@value #FILE}, with a signature that does not verify
 * (the sums changed after signing) or one made by another key is refused: {@link HostSetupException}
 * {@code IMAGE_INVALID} saying which and what to do. BouncyCastle's OpenPGP does the cryptography.
 */
public final class ImageSignature {

    /** The detached, armoured signature of {@code SHA256SUMS}, next to it in the image directory. */
    public static final String FILE = "SHA256SUMS.asc";
    /** The environment variable naming the armoured public key images must be signed with. */
    public static final String ENV = "QVM_IMAGE_KEY";
    /** The most a key or signature file may hold. */
    static final int MAX_BYTES = 1 << 20;

    private final PGPPublicKeyRingCollection keys;
    private final String source;

    private ImageSignature(PGPPublicKeyRingCollection keys, String source) {
        this.keys = keys;
        this.source = source;
    }

    /**
     * The key a backend requires: {@code configured} (the builder's), else {@value #ENV}, else
     * none (no signature required).
     *
     * @throws IllegalArgumentException the key file is missing or holds no OpenPGP public key
     */
    public static Optional<ImageSignature> configured(Path configured, QvmEnvironment env) {
        if (configured != null) {
            return Optional.of(trusting(configured));
        }
        return env.get(ENV).filter(v -> !v.isBlank()).map(v -> trusting(Path.of(v)));
    }

    /**
     * Requires signatures by the armoured public key (or keys) in {@code publicKeyFile}.
     *
     * @throws IllegalArgumentException the file is missing, too large or holds no OpenPGP public key
     */
    public static ImageSignature trusting(Path publicKeyFile) {
        Objects.requireNonNull(publicKeyFile, "publicKeyFile");
        byte[] bytes = read(publicKeyFile, "the image signing key");
        try (InputStream in = PGPUtil.getDecoderStream(new ByteArrayInputStream(bytes))) {
            PGPPublicKeyRingCollection keys = new PGPPublicKeyRingCollection(in, new BcKeyFingerprintCalculator());
            if (keys.size() == 0) {
                throw new IllegalArgumentException(publicKeyFile + " holds no OpenPGP public key: give the armoured "
                        + "public key of the release's signing key (gpg --armor --export KEYID)");
            }
            return new ImageSignature(keys, publicKeyFile.toString());
        } catch (IOException | PGPException | RuntimeException e) {
            if (e instanceof IllegalArgumentException iae) {
                throw iae;
            }
            throw new IllegalArgumentException(publicKeyFile + " is not an OpenPGP public key (" + e.getMessage()
                    + "): give the armoured public key of the release's signing key", e);
        }
    }

    /** The fingerprints of the trusted keys, upper-case hex. */
    public List<String> fingerprints() {
        List<String> out = new ArrayList<>();
        for (Iterator<PGPPublicKeyRing> r = keys.getKeyRings(); r.hasNext(); ) {
            for (Iterator<PGPPublicKey> k = r.next().getPublicKeys(); k.hasNext(); ) {
                out.add(Hex.toHexString(k.next().getFingerprint()).toUpperCase(Locale.ROOT));
            }
        }
        return out;
    }

    /**
     * Refuses {@code image} unless its {@code SHA256SUMS} carries a valid signature by a trusted key.
     *
     * @throws HostSetupException {@code IMAGE_INVALID}: no signature, a bad one, or another key's
     */
    public void check(GuestImage image) {
        Path dir = image.dir();
        String fix = " This backend requires images signed by " + describe() + ": use an image released with "
                + "qvm release --signing-key (its " + FILE + " beside " + GuestImage.SUMS + "), or configure the key it "
                + "was signed with.";
        byte[] sums = readImageFile(dir.resolve(GuestImage.SUMS), fix);
        byte[] signature;
        try {
            signature = read(dir.resolve(FILE), "the image's signature");
        } catch (IllegalArgumentException e) {
            throw invalid("the guest image at " + dir + " is not signed: " + e.getMessage() + ".", fix);
        }
        List<PGPSignature> sigs = signatures(signature);
        if (sigs.isEmpty()) {
            throw invalid(dir.resolve(FILE) + " holds no OpenPGP signature.", fix);
        }
        List<String> others = new ArrayList<>();
        for (PGPSignature s : sigs) {
            PGPPublicKey key = keys.getPublicKey(s.getKeyID());
            if (key == null) {
                others.add(String.format(Locale.ROOT, "%016X", s.getKeyID()));
                continue;
            }
            try {
                s.init(new BcPGPContentVerifierBuilderProvider(), key);
                s.update(sums);
                if (s.verify()) {
                    return;
                }
            } catch (PGPException | RuntimeException e) {
                throw invalid(dir.resolve(FILE) + " cannot be checked: " + e.getMessage() + ".", fix);
            }
            throw invalid("the signature " + dir.resolve(FILE) + " by key " + String.format(Locale.ROOT, "%016X",
                    s.getKeyID()) + " does not match " + dir.resolve(GuestImage.SUMS) + ": the sums changed after they "
                    + "were signed.", fix);
        }
        throw invalid(dir.resolve(FILE) + " was made by key " + String.join(", ", others) + ", not by a trusted key.",
                fix);
    }

    private String describe() {
        return "the key in " + source + " (" + String.join(", ", fingerprints()) + ")";
    }

    private static List<PGPSignature> signatures(byte[] armoured) {
        List<PGPSignature> out = new ArrayList<>();
        try (InputStream in = PGPUtil.getDecoderStream(new ByteArrayInputStream(armoured))) {
            PGPObjectFactory f = new PGPObjectFactory(in, new BcKeyFingerprintCalculator());
            for (Object o; (o = f.nextObject()) != null; ) {
                if (o instanceof PGPSignatureList l) {
                    l.forEach(out::add);
                }
            }
        } catch (IOException | RuntimeException e) {
            // Not OpenPGP: what was read so far counts, the rest is no signature.
        }
        return out;
    }

    private static byte[] readImageFile(Path p, String fix) {
        try {
            return read(p, "the image's sums");
        } catch (IllegalArgumentException e) {
            throw invalid(e.getMessage() + ".", fix);
        }
    }

    private static byte[] read(Path p, String what) {
        try {
            if (Files.size(p) > MAX_BYTES) {
                throw new IllegalArgumentException(what + " " + p + " is larger than " + MAX_BYTES + " bytes");
            }
            return Files.readAllBytes(p);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(what + " " + p + " does not exist", e);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + what + " " + p + ": " + e, e);
        }
    }

    private static HostSetupException invalid(String problem, String fix) {
        return new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, problem + fix);
    }
}
