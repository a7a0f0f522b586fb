package io.qvm.release;

import io.qvm.admin.ImageArtifacts;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.LocalDateTime;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * Writes the Maven artifact of one staged image, {@link ImageArtifacts}'s zip: its entries sit at
 * its root, exactly the files of the image directory ({@link ImageArtifacts#REQUIRED_FILES} and the SBOM,
 * {@link ImageArtifacts#OPTIONAL_FILES}), so that the backend's resolver unpacks it into an image
 * directory that verifies as it is. Deterministic: entries sorted by name, one fixed DOS time
 * (1980-01-01), no extra fields; the already compressed kernel and initramfs are stored, the rest
 * deflated. A directory with any other file, or without a required one, is refused.
 */
public final class ImageZipWriter {

    private static final LocalDateTime FIXED_TIME = LocalDateTime.of(1980, 1, 1, 0, 0);

    private ImageZipWriter() {
    }

    /** Zips the regular files directly in {@code imageDir} into {@code zip}. */
    public static void write(Path imageDir, Path zip) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(imageDir)) {
            files = s.sorted().toList();
        }
        List<String> names = files.stream().map(f -> f.getFileName().toString()).toList();
        for (Path f : files) {
            String name = f.getFileName().toString();
            if (!Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                    || !(ImageArtifacts.REQUIRED_FILES.contains(name) || ImageArtifacts.OPTIONAL_FILES.contains(name))) {
                throw new IOException(f + " does not belong in an image zip (" + ImageArtifacts.REQUIRED_FILES + " and "
                        + ImageArtifacts.OPTIONAL_FILES + " only)");
            }
        }
        if (!names.containsAll(ImageArtifacts.REQUIRED_FILES)) {
            throw new IOException(imageDir + " lacks " + ImageArtifacts.REQUIRED_FILES.stream()
                    .filter(n -> !names.contains(n)).toList() + " for an image zip");
        }
        try (OutputStream fo = new BufferedOutputStream(Files.newOutputStream(zip), 1 << 16);
                ZipOutputStream out = new ZipOutputStream(fo)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                ZipEntry e = new ZipEntry(name);
                e.setTimeLocal(FIXED_TIME);
                if (compressed(name)) {
                    e.setMethod(ZipEntry.STORED);
                    e.setSize(Files.size(f));
                    e.setCompressedSize(Files.size(f));
                    e.setCrc(crc(f));
                } else {
                    e.setMethod(ZipEntry.DEFLATED);
                }
                out.putNextEntry(e);
                Files.copy(f, out);
                out.closeEntry();
            }
        }
    }

    /**
     * The SHA-256 of each entry of {@code zip}, by name: what the release compares with the sums it
     * recorded at staging before it installs the zip.
     */
    public static Map<String, String> sha256(Path zip) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (ZipFile z = new ZipFile(zip.toFile())) {
            for (ZipEntry e : Collections.list(z.entries())) {
                MessageDigest md = MessageDigest.getInstance("SHA-256");
                try (InputStream in = new DigestInputStream(z.getInputStream(e), md)) {
                    in.transferTo(OutputStream.nullOutputStream());
                }
                if (out.put(e.getName(), HexFormat.of().formatHex(md.digest())) != null) {
                    throw new IOException(zip + " holds " + e.getName() + " twice");
                }
            }
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
        return out;
    }

    private static boolean compressed(String name) {
        return name.endsWith(".gz") || name.equals("vmlinuz");
    }

    private static long crc(Path f) throws IOException {
        CRC32 crc = new CRC32();
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(f)) {
            for (int n; (n = in.read(buf)) > 0; ) {
                crc.update(buf, 0, n);
            }
        }
        return crc.getValue();
    }
}
