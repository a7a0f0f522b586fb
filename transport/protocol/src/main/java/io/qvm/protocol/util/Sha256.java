package io.qvm.protocol.util;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The SHA-256 of a file (streamed: images are tens of megabytes) or of bytes, as lower-case hex. */
public final class Sha256 {

    private Sha256() {
    }

    public static String of(Path file) throws IOException {
        MessageDigest md = digest();
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buf = new byte[1 << 16];
            int n;
            while ((n = in.read(buf)) > 0) {
                md.update(buf, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    /**
     * What {@link #copy} wrote: the bytes and their SHA-256, or {@code overLimit} when the stream had
     * more than the limit (then {@code bytes} is past the limit, and the copy was cut off there).
     */
    public record Copied(long bytes, String sha256, boolean overLimit) {
    }

    /**
     * Copies {@code in} into {@code to} (created or truncated), hashing it as it goes, and stops at
     * the first read that passes {@code limit} bytes: a download of pinned bytes never writes much
     * more than it should, and never reads the rest.
     */
    public static Copied copy(InputStream in, Path to, long limit) throws IOException {
        MessageDigest md = digest();
        long total = 0;
        byte[] buf = new byte[1 << 16];
        try (OutputStream out = Files.newOutputStream(to)) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                total += n;
                if (total > limit) {
                    return new Copied(total, null, true);
                }
                md.update(buf, 0, n);
                out.write(buf, 0, n);
            }
        }
        return new Copied(total, HexFormat.of().formatHex(md.digest()), false);
    }

    public static String of(byte[] bytes) {
        return HexFormat.of().formatHex(digest().digest(bytes));
    }

    private static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
