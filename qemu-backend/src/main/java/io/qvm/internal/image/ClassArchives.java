package io.qvm.internal.image;

import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.Sha256;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The worker's class archives this host made, one per guest image (adr/0018): a class-data-sharing
 * archive of the classes the worker's warm-up loads, which its JVM maps instead of reading,
 * parsing and verifying them at every cold boot.
 *
 * <p>JDK 17's {@code -Xshare:dump} does not write the same bytes twice, so the archive cannot be
 * part of the image, which must be byte-identical on every host. Each host makes its own, once per
 * image, inside a VM of that image (the guest JVM runs nowhere else on a macOS or Windows host): the
 * first cold boot of an image asks the init for one ({@link Plan.Make}); the init makes it before
 * starting runsc, in a guest that has seen no document, and writes it to the port
 * {@code qvm.archive}, behind which QEMU writes a file. Once that boot is READY,
 * {@link #install} checks the file and keeps, in a private directory,
 *
 * <pre>
 *   class-archives/                          0700, ours ({@link PrivateDirectory})
 *     &lt;arch&gt;-&lt;initramfs sha256&gt;/           0700: one image
 *       initramfs.cpio                       the image's initramfs, then a cpio holding the archive
 *       archive.properties                   the hashes and sizes of both, and when it was made
 *       failed                               one line per attempt that made no archive (at most {@value #MAX_ATTEMPTS})
 * </pre>
 *
 * <p>At most {@value #MAX_IMAGES} images are kept: each install deletes the least recently used
 * others beyond that (but none used in the last half hour).
 *
 * <p>Later cold and template boots of that image boot {@code initramfs.cpio} instead of the image's
 * initramfs ({@link Plan.Use}): the kernel unpacks the appended cpio over the image's files, which
 * puts the archive at {@value ImageDirectory#CLASS_ARCHIVE} in the worker's root. Its SHA-256 is
 * compared with {@code archive.properties} once per process; the image's own initramfs, verified
 * as always, is its first part, and its hash names the directory. A JVM that finds the archive
 * unusable (another JVM, a changed jar) runs without it: the archive is a speed-up, never a
 * condition of a boot, and a boot whose archive could not be made goes on without one.
 */
public final class ClassArchives {

    private static final System.Logger LOG = System.getLogger(ClassArchives.class.getName());

    /** The directory under the cache. */
    public static final String DIR = "class-archives";
    /** The largest archive accepted by default; QEMU is stopped when the guest writes more (VmStart). */
    public static final long MAX_BYTES = 256L * 1024 * 1024;
    /**
     * Images whose archives (or records of failed attempts) are kept; after an install the least
     * recently made others beyond this are deleted, so that images built again and again (each a
     * new initramfs) do not fill the disk.
     */
    public static final int MAX_IMAGES = 6;
    /** How long a failed attempt counts against {@link #MAX_ATTEMPTS}. */
    public static final java.time.Duration FAILURES_EXPIRE = java.time.Duration.ofDays(1);
    /** An image used this recently is not evicted, nor a build directory this young deleted. */
    static final java.time.Duration IN_USE = java.time.Duration.ofMinutes(30);
    /**
     * Attempts that made no archive (in the last {@link #FAILURES_EXPIRE}), after which an image
     * boots without one until they expire or its record is removed.
     */
    public static final int MAX_ATTEMPTS = 2;

    /**
     * How long the init may spend making the archive, in seconds: half the boot deadline, at
     * most {@value #MAX_MAKE_SECONDS}. The boot that makes it gets that much more than its deadline
     * (VmStart), so an archive never costs a boot, only the first one its time.
     */
    public static int makeSeconds(io.qvm.SandboxConfig c) {
        return (int) Math.max(1, Math.min(MAX_MAKE_SECONDS, c.bootTimeout().toSeconds() / 2));
    }

    /** The most time {@link #makeSeconds} gives. */
    public static final int MAX_MAKE_SECONDS = 120;

    static final String INITRD = "initramfs.cpio";
    static final String META = "archive.properties";
    static final String FAILED = "failed";
    /** A HotSpot CDS archive starts with 0xf00baba2, little-endian. */
    private static final byte[] MAGIC = {(byte) 0xa2, (byte) 0xab, 0x0b, (byte) 0xf0};
    private static final SecureRandom RANDOM = new SecureRandom();

    /** What a boot of an image does about its class archive. */
    public sealed interface Plan permits Plan.Use, Plan.Make, Plan.None {
        /** Boot {@code initrd}: the image's initramfs with the archive appended. */
        record Use(Path initrd) implements Plan {
        }

        /** Ask the init to make one; this boot holds the process's claim on the image until released. */
        record Make(String image) implements Plan {
        }

        /** Neither (disabled, given up, or being made by another boot of this process). */
        record None(String why) implements Plan {
        }
    }

    private final Optional<Path> root;
    private final long maxBytes;
    private final String disabledWhy;
    private final Set<String> making = ConcurrentHashMap.newKeySet();
    private final Set<String> verified = ConcurrentHashMap.newKeySet();

    private ClassArchives(Optional<Path> root, long maxBytes, String disabledWhy) {
        this.root = root;
        this.maxBytes = maxBytes;
        this.disabledWhy = disabledWhy;
    }

    /** Archives kept under {@code root}. */
    public static ClassArchives at(Path root) {
        return at(root, MAX_BYTES);
    }

    /** Archives kept under {@code root}, none larger than {@code maxBytes} (a test's seam; default {@value #MAX_BYTES}). */
    public static ClassArchives at(Path root, long maxBytes) {
        if (maxBytes < MAGIC.length) {
            throw new IllegalArgumentException("maxBytes " + maxBytes + " is below a CDS archive's header");
        }
        return new ClassArchives(Optional.of(Objects.requireNonNull(root, "root")), maxBytes, "");
    }

    /** No archives: every boot is {@link Plan.None} with {@code why}. */
    public static ClassArchives disabled(String why) {
        return new ClassArchives(Optional.empty(), MAX_BYTES, Objects.requireNonNull(why, "why"));
    }

    /** The largest archive accepted: a boot whose guest writes more is stopped. */
    public long maxBytes() {
        return maxBytes;
    }

    /** The directory name of {@code image}'s archive: its architecture and its initramfs's SHA-256. */
    static String name(GuestImage image) {
        String sha = image.sha256().get(GuestImage.INITRD);
        if (sha == null) {
            throw new IllegalArgumentException("the image at " + image.dir() + " has no verified " + GuestImage.INITRD);
        }
        return image.arch().qemuName() + "-" + sha;
    }

    /**
     * What a cold or template boot of {@code image} does: use the archive kept for it, make one
     * (when none is kept, fewer than {@value #MAX_ATTEMPTS} attempts failed and no other boot of
     * this process is making it), or neither. Never throws: a store that cannot be read is
     * {@link Plan.None} with the reason.
     */
    public Plan plan(GuestImage image) {
        if (root.isEmpty()) {
            return new Plan.None(disabledWhy);
        }
        String name = name(image);
        Path dir = root.get().resolve(name);
        try {
            if (PrivateDirectory.verifyIfPresent(root.get()) && Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                PrivateDirectory.verify(dir);
                Optional<Path> kept = kept(image, dir);
                if (kept.isPresent()) {
                    touch(dir); // the least recently used go first (evict)
                    return new Plan.Use(kept.get());
                }
                if (givenUp(dir)) {
                    return new Plan.None(failures(dir) + " boots made no class archive for this image in the last day ("
                            + dir.resolve(FAILED) + " says why); remove " + dir + " to try again now");
                }
            }
        } catch (IOException | RuntimeException e) {
            return new Plan.None("the class archives at " + root.get() + " cannot be used: " + e.getMessage());
        }
        if (!making.add(name)) {
            return new Plan.None("another boot is making this image's class archive");
        }
        return new Plan.Make(name);
    }

    /**
     * Whether a boot of {@code image} planned now would make the archive (none kept, not given
     * up), without claiming it: so that a start can give its boot the time to (see
     * {@link #makeSeconds}).
     */
    public boolean wouldMake(GuestImage image) {
        if (root.isEmpty()) {
            return false;
        }
        Path dir = root.get().resolve(name(image));
        try {
            if (!PrivateDirectory.verifyIfPresent(root.get()) || !Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                return true;
            }
            return !Files.isRegularFile(dir.resolve(META), LinkOption.NOFOLLOW_LINKS) && !givenUp(dir);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static void touch(Path dir) {
        try {
            Files.setLastModifiedTime(dir, java.nio.file.attribute.FileTime.from(Instant.now()));
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not mark " + dir + " used: " + e);
        }
    }

    /** The kept initramfs of {@code image}, checked (its SHA-256 once per process), or empty. */
    private Optional<Path> kept(GuestImage image, Path dir) throws IOException {
        Path meta = dir.resolve(META);
        Path initrd = dir.resolve(INITRD);
        if (!Files.isRegularFile(meta, LinkOption.NOFOLLOW_LINKS) || !Files.isRegularFile(initrd, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(meta, StandardCharsets.UTF_8)) {
            p.load(r);
        }
        String imageSha = image.sha256().get(GuestImage.INITRD);
        if (!imageSha.equals(p.getProperty("image.initramfs.sha256"))) {
            throw new IOException(meta + " is for another image");
        }
        long bytes = Long.parseLong(p.getProperty("initramfs.bytes", "-1"));
        String sha = p.getProperty("initramfs.sha256", "");
        long size = Files.size(initrd);
        if (size != bytes) {
            throw new IOException(initrd + " has " + size + " bytes, " + META + " says " + bytes);
        }
        String key = initrd.toAbsolutePath() + "|" + bytes + "|" + Files.getLastModifiedTime(initrd, LinkOption.NOFOLLOW_LINKS)
                + "|" + sha;
        if (!verified.contains(key)) {
            String have = Sha256.of(initrd);
            if (!have.equals(sha)) {
                throw new IOException(initrd + "'s SHA-256 is " + have + ", " + META + " says " + sha);
            }
            verified.add(key);
        }
        return Optional.of(initrd);
    }

    /** Whether {@value #MAX_ATTEMPTS} attempts at {@code dir}'s image failed in the last {@link #FAILURES_EXPIRE}. */
    private static boolean givenUp(Path dir) throws IOException {
        return failures(dir) >= MAX_ATTEMPTS;
    }

    /** The failed attempts recorded in the last {@link #FAILURES_EXPIRE} (older ones no longer count). */
    private static long failures(Path dir) throws IOException {
        Path f = dir.resolve(FAILED);
        if (!Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        Instant since = Instant.now().minus(FAILURES_EXPIRE);
        try (var lines = Files.lines(f, StandardCharsets.UTF_8)) {
            return lines.filter(l -> !l.isBlank()).filter(l -> {
                try {
                    return Instant.parse(l.substring(0, Math.max(0, l.indexOf(' ')))).isAfter(since);
                } catch (RuntimeException e) {
                    return true; // a line that does not start with its instant counts
                }
            }).count();
        }
    }

    /**
     * Keeps the archive a boot of {@code claim} made: {@code written} (what QEMU wrote from the
     * port) must hold exactly the {@code announced} bytes the init reported, at most
     * {@value #MAX_BYTES}, and start as a CDS archive does. The kept initramfs is written aside and
     * moved into place complete. Releases the claim.
     *
     * @return the initramfs later boots of the image use
     * @throws IOException why the archive was refused or could not be kept (also recorded as a failed attempt)
     */
    public Path install(GuestImage image, Plan.Make claim, Path written, long announced) throws IOException {
        Path top = root.orElseThrow();
        try {
            long size = Files.size(written);
            if (size != announced) {
                throw new IOException("the guest announced " + announced + " bytes of class archive, QEMU wrote " + size);
            }
            if (size > maxBytes || size < MAGIC.length) {
                throw new IOException("a class archive of " + size + " bytes is outside 4.." + maxBytes);
            }
            byte[] head = new byte[MAGIC.length];
            try (InputStream in = Files.newInputStream(written, LinkOption.NOFOLLOW_LINKS)) {
                if (in.readNBytes(head, 0, head.length) != head.length || !java.util.Arrays.equals(head, MAGIC)) {
                    throw new IOException("what the guest wrote is not a class-data-sharing archive (magic "
                            + HexFormat.of().formatHex(head) + ")");
                }
            }
            PrivateDirectory.ensure(top);
            Path dir = top.resolve(claim.image());
            Path tmp = PrivateDirectory.createNew(top.resolve(".build-" + claim.image() + "-" + random()));
            try {
                Path initrd = tmp.resolve(INITRD);
                String[] shas = writeInitrd(image.initrd(), written, size, initrd);
                Properties p = new Properties();
                p.setProperty("image.initramfs.sha256", image.sha256().get(GuestImage.INITRD));
                p.setProperty("archive.sha256", shas[1]);
                p.setProperty("archive.bytes", Long.toString(size));
                p.setProperty("initramfs.sha256", shas[0]);
                p.setProperty("initramfs.bytes", Long.toString(Files.size(initrd)));
                p.setProperty("made", Instant.now().toString());
                try (Writer w = Files.newBufferedWriter(tmp.resolve(META), StandardCharsets.UTF_8, StandardOpenOption.CREATE_NEW)) {
                    p.store(w, "qvm class archive (adr/0018)");
                }
                if (Files.isRegularFile(dir.resolve(META), LinkOption.NOFOLLOW_LINKS)) {
                    // Another process kept one meanwhile, and a boot may be about to use it: keep that one.
                    return dir.resolve(INITRD);
                }
                Path old = null;
                if (Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) { // a record of failed attempts: moved aside whole
                    old = top.resolve(".old-" + claim.image() + "-" + random());
                    Files.move(dir, old, StandardCopyOption.ATOMIC_MOVE);
                }
                Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
                if (old != null) {
                    FileTrees.deleteQuietly(old);
                }
                evict(top, dir);
                return dir.resolve(INITRD);
            } finally {
                if (Files.exists(tmp, LinkOption.NOFOLLOW_LINKS)) {
                    FileTrees.delete(tmp);
                }
            }
        } catch (IOException | RuntimeException e) {
            failed(claim, e.getMessage());
            throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
        } finally {
            making.remove(claim.image());
        }
    }

    /**
     * Deletes the images beyond {@link #MAX_IMAGES}, least recently used first, never {@code keep}
     * nor one used in the last {@link #IN_USE} (a boot of another process may be about to pass its
     * file to QEMU), and build directories older than that (a process killed while it installed).
     */
    private static void evict(Path top, Path keep) {
        java.nio.file.attribute.FileTime recent = java.nio.file.attribute.FileTime.from(Instant.now().minus(IN_USE));
        try (var entries = Files.list(top)) {
            List<Path> all = entries.filter(d -> Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)).toList();
            for (Path d : all) {
                String n = d.getFileName().toString();
                if ((n.startsWith(".build-") || n.startsWith(".old-")) && lastModified(d).compareTo(recent) < 0) {
                    FileTrees.deleteQuietly(d);
                }
            }
            List<Path> others = all.stream().filter(d -> !d.equals(keep) && !d.getFileName().toString().startsWith("."))
                    .sorted(java.util.Comparator.comparing((Path d) -> lastModified(d)).reversed()).toList();
            for (Path d : others.subList(Math.min(others.size(), MAX_IMAGES - 1), others.size())) {
                if (lastModified(d).compareTo(recent) < 0) {
                    FileTrees.deleteQuietly(d);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not evict old class archives: " + e);
        }
    }

    private static java.nio.file.attribute.FileTime lastModified(Path d) {
        try {
            return Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            return java.nio.file.attribute.FileTime.fromMillis(0);
        }
    }

    /**
     * Records that a boot holding {@code claim} made no archive, and why (after
     * {@value #MAX_ATTEMPTS} such records, the image boots without one). Releases the claim. Best effort.
     */
    public void failed(Plan.Make claim, String why) {
        try {
            Path top = root.orElseThrow();
            PrivateDirectory.ensure(top);
            Path dir = top.resolve(claim.image());
            if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                PrivateDirectory.createNew(dir);
            }
            String line = Instant.now() + " " + why.replaceAll("[\\r\\n]+", " ") + "\n";
            Files.writeString(dir.resolve(FAILED), line, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not record a failed class archive: " + e);
        } finally {
            making.remove(claim.image());
        }
    }

    private final java.util.Map<String, Integer> suspicions = new ConcurrentHashMap<>();

    /** Workers that died before READY in a row while they mapped an image's archive, after which it is set aside. */
    public static final int MAX_SUSPICIONS = 2;

    /**
     * A boot that used {@code image}'s archive reached READY: the archive is not suspected.
     */
    public void cleared(GuestImage image) {
        suspicions.remove(name(image));
    }

    /**
     * A boot that used {@code image}'s archive ended with the worker dead before READY. Workers
     * do die at start now and then on their own (a fresh VM then boots), so one such death proves
     * nothing; {@value #MAX_SUSPICIONS} in a row set the archive aside (deleted, with a failed
     * attempt recorded), and the image's next boot makes a new one.
     *
     * @return whether the archive was set aside
     */
    public boolean suspected(GuestImage image, String why) {
        String name = name(image);
        int n = suspicions.merge(name, 1, Integer::sum);
        if (n < MAX_SUSPICIONS || root.isEmpty()) {
            return false;
        }
        suspicions.remove(name);
        Path dir = root.get().resolve(name);
        try {
            Path aside = root.get().resolve(".old-" + name + "-" + random());
            Files.move(dir, aside, StandardCopyOption.ATOMIC_MOVE);
            FileTrees.deleteQuietly(aside);
            PrivateDirectory.createNew(dir);
            Files.writeString(dir.resolve(FAILED), Instant.now() + " " + n + " workers in a row died before READY with"
                    + " this archive (" + why.replaceAll("[\\r\\n]+", " ") + "): set aside\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE_NEW);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "could not set aside the class archive " + dir + ": " + e);
            return false;
        }
    }

    /** Releases {@code claim} without a verdict: its boot failed before the archive could be judged. */
    public void released(Plan.Make claim) {
        making.remove(claim.image());
    }

    /**
     * Writes {@code out}: {@code image}, zero-padded to 4 bytes, then a newc cpio holding
     * {@code archive} at {@value ImageDirectory#CLASS_ARCHIVE_IN_INITRAMFS} (mode 0444, root's,
     * mtime 0) and the trailer, padded to 512 bytes. The kernel unpacks each archive of the
     * initramfs in turn, compressed or not.
     *
     * @return the SHA-256 of {@code out}, then of the archive
     */
    static String[] writeInitrd(Path image, Path archive, long archiveBytes, Path out) throws IOException {
        MessageDigest all = sha256();
        MessageDigest jsa = sha256();
        try (OutputStream o = new DigestOutputStream(new BufferedOutputStream(Files.newOutputStream(out,
                StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), 1 << 16), all)) {
            long n;
            try (InputStream in = Files.newInputStream(image, LinkOption.NOFOLLOW_LINKS)) {
                n = in.transferTo(o);
            }
            n += pad(o, n, 4);
            byte[] header = header(ImageDirectory.CLASS_ARCHIVE_IN_INITRAMFS, 0100444, archiveBytes);
            o.write(header);
            n += header.length;
            try (InputStream in = new java.security.DigestInputStream(Files.newInputStream(archive, LinkOption.NOFOLLOW_LINKS), jsa)) {
                long copied = in.transferTo(o);
                if (copied != archiveBytes) {
                    throw new IOException("the class archive changed while it was copied (" + copied + " bytes, not "
                            + archiveBytes + ")");
                }
                n += copied;
            }
            n += pad(o, n, 4);
            byte[] trailer = header("TRAILER!!!", 0, 0);
            o.write(trailer);
            n += trailer.length;
            pad(o, n, 512);
        }
        return new String[] {HexFormat.of().formatHex(all.digest()), HexFormat.of().formatHex(jsa.digest())};
    }

    /** A newc header and name (NUL-terminated, padded so that the data starts 4-aligned). */
    static byte[] header(String name, int mode, long size) {
        byte[] nameBytes = (name + "\0").getBytes(StandardCharsets.US_ASCII);
        StringBuilder h = new StringBuilder("070701");
        long[] fields = {0, mode, 0, 0, 1, 0, size, 0, 0, 0, 0, nameBytes.length, 0};
        for (long f : fields) {
            h.append(String.format(java.util.Locale.ROOT, "%08X", f));
        }
        byte[] head = h.toString().getBytes(StandardCharsets.US_ASCII);
        int len = head.length + nameBytes.length;
        byte[] out = new byte[(len + 3) & ~3];
        System.arraycopy(head, 0, out, 0, head.length);
        System.arraycopy(nameBytes, 0, out, head.length, nameBytes.length);
        return out;
    }

    private static long pad(OutputStream o, long n, int to) throws IOException {
        int pad = (int) ((to - n % to) % to);
        o.write(new byte[pad]);
        return pad;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String random() {
        byte[] b = new byte[6];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
