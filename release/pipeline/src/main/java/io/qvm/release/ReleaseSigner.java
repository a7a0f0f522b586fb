package io.qvm.release;

import io.qvm.admin.ImageArtifacts;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Locale;
import java.util.Objects;
import org.bouncycastle.bcpg.ArmoredOutputStream;
import org.bouncycastle.bcpg.HashAlgorithmTags;
import org.bouncycastle.openpgp.PGPException;
import org.bouncycastle.openpgp.PGPPrivateKey;
import org.bouncycastle.openpgp.PGPSecretKey;
import org.bouncycastle.openpgp.PGPSecretKeyRing;
import org.bouncycastle.openpgp.PGPSecretKeyRingCollection;
import org.bouncycastle.openpgp.PGPSignature;
import org.bouncycastle.openpgp.PGPSignatureGenerator;
import org.bouncycastle.openpgp.PGPUtil;
import org.bouncycastle.openpgp.operator.bc.BcKeyFingerprintCalculator;
import org.bouncycastle.openpgp.operator.bc.BcPBESecretKeyDecryptorBuilder;
import org.bouncycastle.openpgp.operator.bc.BcPGPContentSignerBuilder;
import org.bouncycastle.openpgp.operator.bc.BcPGPDigestCalculatorProvider;
import org.bouncycastle.util.encoders.Hex;

/**
 * Signs a release's checksum files: a detached, ASCII-armoured OpenPGP signature (SHA-256) of a
 * {@code SHA256SUMS}, written beside it as {@value ImageArtifacts#SIGNATURE_FILE} — what the backend checks
 * when it is given the matching public key ({@link ImageArtifacts#checkSignature}). The key is an armoured secret
 * key (e.g. {@code gpg --armor --export-secret-keys KEYID}); its first secret key that can sign is
 * used, unlocked with the passphrase the release was given (from an environment variable or a
 * file, never the command line). BouncyCastle's OpenPGP does the cryptography.
 */
public final class ReleaseSigner {

    /** The environment variable {@code qvm release} reads the key's passphrase from. */
    public static final String PASSPHRASE_ENV = "QVM_SIGNING_PASSPHRASE";
    static final int MAX_KEY_BYTES = 1 << 20;

    private final PGPSecretKey key;
    private final PGPPrivateKey privateKey;
    private final String source;

    private ReleaseSigner(PGPSecretKey key, PGPPrivateKey privateKey, String source) {
        this.key = key;
        this.privateKey = privateKey;
        this.source = source;
    }

    /**
     * Loads and unlocks the signing key in {@code armouredSecretKey}.
     *
     * @param passphrase the key's passphrase (empty for a key without one); not kept
     * @throws IllegalArgumentException the file is missing or holds no secret signing key, or the
     *     passphrase does not unlock it
     */
    public static ReleaseSigner load(Path armouredSecretKey, char[] passphrase) {
        Objects.requireNonNull(armouredSecretKey, "armouredSecretKey");
        byte[] bytes;
        try {
            if (Files.size(armouredSecretKey) > MAX_KEY_BYTES) {
                throw new IllegalArgumentException("the signing key " + armouredSecretKey + " is larger than "
                        + MAX_KEY_BYTES + " bytes: not a key");
            }
            bytes = Files.readAllBytes(armouredSecretKey);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the signing key " + armouredSecretKey + ": " + e, e);
        }
        PGPSecretKey signing = null;
        try (InputStream in = PGPUtil.getDecoderStream(new ByteArrayInputStream(bytes))) {
            PGPSecretKeyRingCollection rings = new PGPSecretKeyRingCollection(in, new BcKeyFingerprintCalculator());
            for (Iterator<PGPSecretKeyRing> r = rings.getKeyRings(); r.hasNext() && signing == null; ) {
                for (Iterator<PGPSecretKey> k = r.next().getSecretKeys(); k.hasNext(); ) {
                    PGPSecretKey s = k.next();
                    if (s.isSigningKey() && !s.isPrivateKeyEmpty()) {
                        signing = s;
                        break;
                    }
                }
            }
        } catch (IOException | PGPException | RuntimeException e) {
            throw new IllegalArgumentException(armouredSecretKey + " is not an OpenPGP secret key (" + e.getMessage()
                    + "): give an armoured secret key (gpg --armor --export-secret-keys KEYID)", e);
        }
        if (signing == null) {
            throw new IllegalArgumentException(armouredSecretKey + " holds no secret key that can sign: give an "
                    + "armoured secret key (gpg --armor --export-secret-keys KEYID)");
        }
        try {
            PGPPrivateKey priv = signing.extractPrivateKey(
                    new BcPBESecretKeyDecryptorBuilder(new BcPGPDigestCalculatorProvider()).build(passphrase));
            if (priv == null) {
                throw new IllegalArgumentException(armouredSecretKey + " holds no private key material (a stub)");
            }
            return new ReleaseSigner(signing, priv, armouredSecretKey.toString());
        } catch (PGPException e) {
            throw new IllegalArgumentException("the passphrase does not unlock the signing key in " + armouredSecretKey
                    + " (" + e.getMessage() + "): give its passphrase in $" + PASSPHRASE_ENV + " or a file "
                    + "(--signing-passphrase-file)", e);
        }
    }

    /** The signing key's fingerprint, upper-case hex. */
    public String fingerprint() {
        return Hex.toHexString(key.getPublicKey().getFingerprint()).toUpperCase(Locale.ROOT);
    }

    /** Where the key came from, for the report. */
    public String source() {
        return source;
    }

    /**
     * Signs {@code dir/SHA256SUMS} into {@code dir/SHA256SUMS.asc}.
     *
     * @return the signature file
     */
    public Path signSums(Path dir) throws IOException {
        Path sums = dir.resolve(Checksums.FILE);
        Path asc = dir.resolve(ImageArtifacts.SIGNATURE_FILE);
        Files.writeString(asc, sign(Files.readAllBytes(sums)));
        return asc;
    }

    /** A detached, armoured signature of {@code data}. */
    public String sign(byte[] data) {
        try {
            PGPSignatureGenerator g = new PGPSignatureGenerator(new BcPGPContentSignerBuilder(
                    key.getPublicKey().getAlgorithm(), HashAlgorithmTags.SHA256), key.getPublicKey());
            g.init(PGPSignature.BINARY_DOCUMENT, privateKey);
            g.update(data);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ArmoredOutputStream out = new ArmoredOutputStream(bytes)) {
                g.generate().encode(out);
            }
            return bytes.toString(java.nio.charset.StandardCharsets.US_ASCII);
        } catch (PGPException | IOException e) {
            throw new ReleaseException("cannot sign with the key " + fingerprint() + " from " + source + ": " + e, e);
        }
    }

    /** Reads a passphrase file: its first line, without the line end. */
    public static char[] passphraseFile(Path file) {
        try {
            String s = Files.readString(file);
            int nl = s.indexOf('\n');
            String line = nl < 0 ? s : s.substring(0, nl);
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            return line.toCharArray();
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the signing key's passphrase file " + file + ": " + e, e);
        }
    }

    /** Writes the signing key's armoured public key (what a backend is configured with) to {@code file}. */
    public Path writePublicKey(Path file) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ArmoredOutputStream out = new ArmoredOutputStream(bytes)) {
            key.getPublicKey().encode(out);
        }
        return Files.write(file, bytes.toByteArray());
    }
}
