package io.qvm.internal.image;

import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.Sha256;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;

/**
 * An image artifact's zip ({@link ImageArtifact}) unpacked into the user cache once, as
 * {@code <cache>/<sha256 of the zip>/<arch>/}, and verified before it is used. The cache root is a
 * private directory ({@link PrivateDirectory}: created 0700; an existing one that is shared,
 * another user's or a symlink is refused), so no other user can plant or swap an unpacked copy.
 *
 * <p>What a zip may do is bounded before anything lands in the cache: only the entry names of
 * {@link ImageArtifact#REQUIRED} and {@link ImageArtifact#OPTIONAL}, each once, at the zip's root
 * (a name with a separator, {@code ..}, a drive or a NUL is refused as unsafe: no zip-slip); each
 * entry at most {@link Limits#maxEntryBytes()} and all together at most
 * {@link Limits#maxTotalBytes()}, counted on the bytes actually inflated, not on the sizes the zip
 * declares. The entries are written into a private temporary directory next to the target, every
 * checksum is verified there ({@link ImageDirectory#verify}), and only then is the directory
 * renamed into place — atomically, so a second JVM never sees half an image: when two unpack at
 * once, the first rename wins and the other uses the winner's copy. A zip that changes while it is
 * unpacked (a Maven install under way) is refused, since the directory is named by its hash.
 *
 * <p>A copy already unpacked is used only if its {@code SHA256SUMS} is the zip's, byte for byte,
 * and every file matches it; a copy modified since is refused, never silently replaced.
 */
final class ImageZip {

    private static final long MIB = 1L << 20;
    private static final String TEMP_PREFIX = ".unpack-";
    /** An unpack directory this old was left by a process that died; it is removed. */
    private static final Duration STALE = Duration.ofHours(1);
    private static final int MAX_SUMS_BYTES = 64 * 1024;

    /**
     * Caps on what a zip may inflate to.
     *
     * @param maxEntryBytes the most one entry may inflate to (a real initramfs is some 60 MiB)
     * @param maxTotalBytes the most all entries together may inflate to
     */
    record Limits(long maxEntryBytes, long maxTotalBytes) {
        static final Limits DEFAULT = new Limits(512 * MIB, 1024 * MIB);

        Limits {
            if (maxEntryBytes <= 0 || maxTotalBytes < maxEntryBytes) {
                throw new IllegalArgumentException("need 0 < maxEntryBytes <= maxTotalBytes, got " + maxEntryBytes
                        + " and " + maxTotalBytes);
            }
        }
    }

    private ImageZip() {
    }

    /**
     * The verified image for {@code arch} in {@code zip}, unpacked under {@code cacheRoot} first
     * unless a sound copy is there.
     *
     * @param fix the sentence that ends an error about the zip itself (how to get a sound one)
     * @throws HostSetupException {@code IMAGE_INVALID}: the zip is unreadable, unsafe or damaged,
     *     the unpacked copy was modified, or the cache cannot be written; {@code HOST_SETUP_NEEDED}:
     *     {@code cacheRoot} exists but is not a private directory of ours (shared, another user's,
     *     a symlink), so nothing in it is trusted
     */
    static GuestImage open(Path zip, Arch arch, Path cacheRoot, Limits limits, String fix) {
        String sha;
        try {
            sha = Sha256.of(zip);
        } catch (IOException e) {
            throw invalid("cannot read the image artifact " + zip + ": " + e.getMessage(), fix);
        }
        try {
            PrivateDirectory.ensure(cacheRoot);
        } catch (UnsafeDirectoryException e) {
            throw new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED, e.getMessage() + " (qvm unpacks "
                    + "image artifacts there; set QVM_CACHE to a directory of its own to use another)", e);
        } catch (IOException e) {
            throw invalid("cannot create " + cacheRoot + ": " + e, "Make it writable, or point QVM_CACHE at a directory "
                    + "you own");
        }
        Path target = cacheRoot.resolve(sha).resolve(arch.qemuName());
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            return reuse(zip, arch, target);
        }
        return unpack(zip, sha, arch, cacheRoot, target, limits, fix);
    }

    private static GuestImage unpack(Path zip, String sha, Arch arch, Path cacheRoot, Path target, Limits limits,
            String fix) {
        Path tmp;
        try {
            removeStale(cacheRoot);
            tmp = Files.createTempDirectory(cacheRoot, TEMP_PREFIX);
        } catch (IOException e) {
            throw invalid("cannot unpack the image artifact " + zip + " into " + cacheRoot + ": " + e,
                    "Make it writable, or point QVM_CACHE at a directory you own");
        }
        try {
            Path dir = Files.createDirectory(tmp.resolve(arch.qemuName()));
            extract(zip, dir, limits, fix);
            if (!sha.equals(Sha256.of(zip))) {
                throw invalid("the image artifact " + zip + " changed while it was unpacked",
                        "Try again once whatever writes it (a Maven install) has finished");
            }
            ImageDirectory.Verified v = ImageDirectory.verify(dir, arch);
            if (!v.ok()) {
                // name the entry in the zip, not the temporary directory that is about to go
                String problem = v.problems().get(0).replace(dir + File.separator, zip + "!/")
                        .replace(dir.toString(), zip.toString());
                throw invalid(problem, "The image artifact is damaged or was modified. " + fix);
            }
            readable(dir);
            Files.createDirectories(target.getParent());
            try {
                Files.move(dir, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                if (!Files.isDirectory(target)) {
                    throw e;
                }
                return reuse(zip, arch, target); // another process unpacked it first: its copy, verified
            }
            return new GuestImage(arch, target, v.manifest().orElseThrow(), v.sha256());
        } catch (IOException e) {
            throw invalid("cannot unpack the image artifact " + zip + " into " + cacheRoot + ": " + e,
                    "Make it writable, or point QVM_CACHE at a directory you own");
        } finally {
            deleteTree(tmp);
        }
    }

    /** Writes the zip's entries into {@code dir}, refusing what an image zip must not hold. */
    private static void extract(Path zip, Path dir, Limits limits, String fix) throws IOException {
        Set<String> allowed = new HashSet<>(ImageArtifact.REQUIRED);
        allowed.addAll(ImageArtifact.OPTIONAL);
        Set<String> seen = new HashSet<>();
        long total = 0;
        try (ZipFile zf = new ZipFile(zip.toFile())) {
            Enumeration<? extends ZipEntry> entries = zf.entries();
            while (entries.hasMoreElements()) {
                ZipEntry e = entries.nextElement();
                String name = e.getName();
                if (unsafe(name)) {
                    throw invalid("the image artifact " + zip + " holds an entry with an unsafe name '" + shown(name)
                            + "' (a path, not a file name at the zip's root): refused, nothing was unpacked", fix);
                }
                if (!allowed.contains(name)) {
                    throw invalid("the image artifact " + zip + " holds an unexpected entry '" + shown(name)
                            + "' (an image zip holds only " + String.join(", ", ImageArtifact.REQUIRED) + " and "
                            + String.join(", ", ImageArtifact.OPTIONAL) + ")", fix);
                }
                if (!seen.add(name)) {
                    throw invalid("the image artifact " + zip + " holds " + name + " twice", fix);
                }
                long cap = Math.min(limits.maxEntryBytes(), limits.maxTotalBytes() - total);
                if (e.getSize() > limits.maxEntryBytes()) {
                    throw tooLarge(zip, name, limits, fix);
                }
                try (InputStream in = zf.getInputStream(e);
                        OutputStream out = Files.newOutputStream(dir.resolve(name), StandardOpenOption.CREATE_NEW)) {
                    long n = copy(in, out, cap);
                    if (n > cap) {
                        throw n > limits.maxEntryBytes() ? tooLarge(zip, name, limits, fix)
                                : invalid("the entries of the image artifact " + zip + " inflate to more than "
                                        + limits.maxTotalBytes() / MIB + " MiB together", fix);
                    }
                    total += n;
                }
            }
        } catch (ZipException e) {
            throw invalid("the image artifact " + zip + " is not a readable zip: " + e.getMessage(), fix);
        }
        List<String> missing = new ArrayList<>(ImageArtifact.REQUIRED);
        missing.removeAll(seen);
        if (!missing.isEmpty()) {
            throw invalid("the image artifact " + zip + " lacks " + String.join(", ", missing), fix);
        }
    }

    /** Copies at most {@code cap + 1} bytes: a result above {@code cap} means the entry is larger. */
    private static long copy(InputStream in, OutputStream out, long cap) throws IOException {
        byte[] buf = new byte[1 << 16];
        long n = 0;
        int r;
        while ((r = in.read(buf, 0, (int) Math.min(buf.length, cap + 1 - n))) > 0) {
            out.write(buf, 0, r);
            n += r;
            if (n > cap) {
                break;
            }
        }
        return n;
    }

    /** An unpacked copy, used only if it still is what the zip holds. */
    private static GuestImage reuse(Path zip, Arch arch, Path target) {
        String fix = "Remove " + target.getParent() + "; the next start unpacks the artifact again";
        byte[] inZip;
        try (ZipFile zf = new ZipFile(zip.toFile())) {
            ZipEntry e = zf.getEntry(ImageDirectory.SHA256SUMS);
            if (e == null) {
                throw invalid("the image artifact " + zip + " lacks " + ImageDirectory.SHA256SUMS, fix);
            }
            try (InputStream in = zf.getInputStream(e)) {
                inZip = in.readNBytes(MAX_SUMS_BYTES + 1);
            }
        } catch (IOException e) {
            throw invalid("the image artifact " + zip + " is not a readable zip: " + e.getMessage(), fix);
        }
        byte[] unpacked;
        try (InputStream in = Files.newInputStream(target.resolve(ImageDirectory.SHA256SUMS))) {
            unpacked = in.readNBytes(MAX_SUMS_BYTES + 1);
        } catch (IOException e) {
            unpacked = null;
        }
        if (unpacked == null || !Arrays.equals(inZip, unpacked)) {
            throw invalid("the image at " + target + " does not match the artifact " + zip + " it was unpacked from"
                    + " (its " + ImageDirectory.SHA256SUMS + " is missing or differs): it was modified", fix);
        }
        return GuestImage.verify(target, arch, "It was modified after it was unpacked from " + zip + ". " + fix);
    }

    /** A name that is not a plain file name: a separator, a drive, a NUL, {@code .}/{@code ..} or empty. */
    static boolean unsafe(String name) {
        return name.isEmpty() || name.equals(".") || name.equals("..") || name.indexOf('/') >= 0
                || name.indexOf('\\') >= 0 || name.indexOf(':') >= 0 || name.indexOf('\0') >= 0;
    }

    /** A name as it may appear in a message: printable ASCII, at most 100 characters. */
    private static String shown(String name) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < name.length() && sb.length() < 100; i++) {
            char c = name.charAt(i);
            sb.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return sb.toString();
    }

    private static HostSetupException tooLarge(Path zip, String name, Limits limits, String fix) {
        return invalid("entry " + name + " of the image artifact " + zip + " inflates to more than "
                + limits.maxEntryBytes() / MIB + " MiB", fix);
    }

    private static HostSetupException invalid(String problem, String fix) {
        return new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, problem + ". " + fix);
    }

    /** The image is public: anyone may read it (QEMU may run as another user). */
    private static void readable(Path dir) throws IOException {
        if (!Files.getFileStore(dir).supportsFileAttributeView("posix")) {
            return;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r--r--"));
            }
        }
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** Removes unpack directories a dead process left (older than an hour). */
    private static void removeStale(Path cacheRoot) {
        FileTime before = FileTime.from(Instant.now().minus(STALE));
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(cacheRoot, TEMP_PREFIX + "*")) {
            for (Path d : dirs) {
                if (Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS).compareTo(before) < 0) {
                    deleteTree(d);
                }
            }
        } catch (IOException e) {
            // a leftover costs disk space only
        }
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> all = Files.walk(root)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // gone already, or a leftover that removeStale takes later
        }
    }
}
