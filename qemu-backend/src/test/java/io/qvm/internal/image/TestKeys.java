package io.qvm.internal.image;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Date;
import org.bouncycastle.bcpg.ArmoredOutputStream;
import org.bouncycastle.bcpg.HashAlgorithmTags;
import org.bouncycastle.bcpg.PublicKeyPacket;
import org.bouncycastle.crypto.generators.Ed25519KeyPairGenerator;
import org.bouncycastle.crypto.params.Ed25519KeyGenerationParameters;
import org.bouncycastle.openpgp.PGPEncryptedData;
import org.bouncycastle.openpgp.PGPException;
import org.bouncycastle.openpgp.PGPKeyPair;
import org.bouncycastle.openpgp.PGPKeyRingGenerator;
import org.bouncycastle.openpgp.PGPPrivateKey;
import org.bouncycastle.openpgp.PGPPublicKey;
import org.bouncycastle.openpgp.PGPSecretKeyRing;
import org.bouncycastle.openpgp.PGPSignature;
import org.bouncycastle.openpgp.PGPSignatureGenerator;
import org.bouncycastle.openpgp.operator.PGPDigestCalculator;
import org.bouncycastle.openpgp.operator.bc.BcPBESecretKeyDecryptorBuilder;
import org.bouncycastle.openpgp.operator.bc.BcPBESecretKeyEncryptorBuilder;
import org.bouncycastle.openpgp.operator.bc.BcPGPContentSignerBuilder;
import org.bouncycastle.openpgp.operator.bc.BcPGPDigestCalculatorProvider;
import org.bouncycastle.openpgp.operator.bc.BcPGPKeyPair;

/**
 * Throwaway OpenPGP keys for tests, made in-process with BouncyCastle: an Ed25519 signing key with
 * a passphrase, its armoured secret and public key files, and detached armoured signatures.
 */
public final class TestKeys {

    /**
     * A key.
     *
     * @param secret the secret key ring
     * @param passphrase its passphrase
     */
    public record Key(PGPSecretKeyRing secret, char[] passphrase) {

        /** The armoured secret key, as {@code gpg --armor --export-secret-keys} writes it. */
        public String armouredSecret() {
            return armour(out -> secret.encode(out));
        }

        /** The armoured public key, as {@code gpg --armor --export} writes it. */
        public String armouredPublic() {
            return armour(out -> secret.toCertificate().encode(out));
        }

        public Path writeSecret(Path file) throws IOException {
            return Files.writeString(file, armouredSecret());
        }

        public Path writePublic(Path file) throws IOException {
            return Files.writeString(file, armouredPublic());
        }

        /** A detached, armoured signature of {@code data}. */
        public String sign(byte[] data) {
            try {
                PGPPrivateKey key = secret.getSecretKey().extractPrivateKey(
                        new BcPBESecretKeyDecryptorBuilder(new BcPGPDigestCalculatorProvider()).build(passphrase));
                PGPSignatureGenerator g = new PGPSignatureGenerator(new BcPGPContentSignerBuilder(
                        secret.getPublicKey().getAlgorithm(), HashAlgorithmTags.SHA256), secret.getPublicKey());
                g.init(PGPSignature.BINARY_DOCUMENT, key);
                g.update(data);
                PGPSignature sig = g.generate();
                return armour(sig::encode);
            } catch (PGPException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private TestKeys() {
    }

    /** A fresh Ed25519 signing key for {@code uid}, protected by {@code passphrase}. */
    public static Key generate(String uid, String passphrase) {
        try {
            Ed25519KeyPairGenerator kpg = new Ed25519KeyPairGenerator();
            kpg.init(new Ed25519KeyGenerationParameters(new SecureRandom()));
            PGPKeyPair pair = new BcPGPKeyPair(PublicKeyPacket.VERSION_4, PGPPublicKey.EDDSA_LEGACY,
                    kpg.generateKeyPair(), new Date());
            PGPDigestCalculator sha1 = new BcPGPDigestCalculatorProvider().get(HashAlgorithmTags.SHA1);
            PGPKeyRingGenerator gen = new PGPKeyRingGenerator(PGPSignature.POSITIVE_CERTIFICATION, pair, uid, sha1,
                    null, null, new BcPGPContentSignerBuilder(pair.getPublicKey().getAlgorithm(),
                            HashAlgorithmTags.SHA256),
                    new BcPBESecretKeyEncryptorBuilder(PGPEncryptedData.AES_256, sha1).build(passphrase.toCharArray()));
            return new Key(gen.generateSecretKeyRing(), passphrase.toCharArray());
        } catch (PGPException e) {
            throw new IllegalStateException(e);
        }
    }

    private interface Encoder {
        void encode(java.io.OutputStream out) throws IOException;
    }

    private static String armour(Encoder e) {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ArmoredOutputStream out = new ArmoredOutputStream(bytes)) {
                e.encode(out);
            }
            return bytes.toString(StandardCharsets.US_ASCII);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}
