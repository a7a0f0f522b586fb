package io.qvm.image;

import io.qvm.protocol.image.Arch;
import io.qvm.image.PackageLock.Entry;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Fetches pinned packages into {@code $QVM_CACHE}, verifies them and extracts them, with no
 * Debian tool: downloads go straight to the mirror's pool ({@link PoolFetcher}, mirrors from
 * {@link DebianMirrors}), extraction is {@link DebArchive}.
 * <pre>
 *   $QVM_CACHE/debs/&lt;sha256&gt;.deb          verified .deb files, named by their hash
 *   $QVM_CACHE/extracted/&lt;sha256&gt;/         the data archive of each (as dpkg-deb -x writes it)
 *   $QVM_CACHE/extracted/&lt;sha256&gt;.done     written by this store once that directory is whole
 *   $QVM_CACHE/apt/&lt;release&gt;-&lt;arch&gt;/       private apt states of the lock refresh (Locker)
 *   $QVM_CACHE/locks/&lt;sha256&gt;.deb|.tree    held while one build fetches or extracts that package
 *                                      ({@link CacheLock}: across threads and processes)
 * </pre>
 * A cached .deb is re-hashed on every use; a wrong hash from the mirror is a
 * {@link PackageHashMismatchException} naming the package and both hashes. Nothing touches the
 * network (and no mirror need be configured) when every pinned package is already in the cache.
 */
public final class PackageStore {
    private final Path cache;
    private final Consumer<String> progress;
    private final Path etcApt;
    private final Map<String, String> env;
    private PoolFetcher fetcher;

    public PackageStore(Path cache, Consumer<String> progress) {
        this(cache, progress, Path.of("/etc/apt"), System.getenv());
    }

    /** @param etcApt where the host's apt sources are read from (normally /etc/apt) */
    PackageStore(Path cache, Consumer<String> progress, Path etcApt) {
        this(cache, progress, etcApt, System.getenv());
    }

    /**
     * @param etcApt where the host's apt sources are read from (normally /etc/apt; need not exist)
     * @param env    where {@link DebianMirrors#ARCHIVE_ENV} and {@link DebianMirrors#SECURITY_ENV}
     *               are read from (normally the process environment)
     */
    public PackageStore(Path cache, Consumer<String> progress, Path etcApt, Map<String, String> env) {
        this.cache = cache;
        this.progress = progress;
        this.etcApt = etcApt;
        this.env = Map.copyOf(env);
    }

    /** The cache directory: {@code $QVM_CACHE}, else {@code ~/.cache/qvm}. */
    public static Path defaultCache() {
        String env = System.getenv("QVM_CACHE");
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        return Path.of(System.getProperty("user.home"), ".cache", "qvm");
    }

    public Path cache() {
        return cache;
    }

    /** The verified .deb of {@code e}, downloading it if the cache does not have it. */
    public Path deb(Arch arch, Entry e) {
        return CacheLock.holding(cache.resolve("locks").resolve(e.sha256() + ".deb"), () -> debLocked(e));
    }

    private Path debLocked(Entry e) {
        Path target = cache.resolve("debs").resolve(e.sha256() + ".deb");
        if (Files.isRegularFile(target)) {
            String actual = Sha256.of(target);
            if (actual.equals(e.sha256())) {
                return target;
            }
            progress.accept("cached " + target.getFileName() + " is corrupt (sha256 " + actual
                    + "), fetching it again");
            delete(target);
        }
        PoolFetcher f = fetcher();
        progress.accept("fetching " + e.name() + " " + e.version() + " (" + e.architecture() + ", "
                + mib(e.size()) + ") from " + e.suite() + ": " + f.url(e));
        f.fetch(e, target);
        return target;
    }

    /** Checks a downloaded .deb against the lock. */
    public static void verify(Entry e, Path deb) {
        String actual = Sha256.of(deb);
        if (!actual.equals(e.sha256())) {
            throw new PackageHashMismatchException(e.label() + " from " + e.suite(), deb.toString(),
                    e.sha256(), actual);
        }
    }

    /**
     * The package's files as {@code dpkg-deb -x} writes them ({@link DebArchive}), cached by hash.
     * A cached directory counts only with its {@code .done} marker, which this store writes after
     * it moved a whole extraction into place: a directory without one (another tool's, an older
     * qvm's, or one whose marker never got written) is removed and extracted again from the
     * verified {@code .deb}, never trusted for what it holds.
     */
    public Path extracted(Arch arch, Entry e) {
        return CacheLock.holding(cache.resolve("locks").resolve(e.sha256() + ".tree"), () -> extractedLocked(arch, e));
    }

    private Path extractedLocked(Arch arch, Entry e) {
        Path dir = cache.resolve("extracted").resolve(e.sha256());
        Path done = cache.resolve("extracted").resolve(e.sha256() + ".done");
        if (Files.isDirectory(dir) && Files.isRegularFile(done)) {
            return dir;
        }
        if (Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            progress.accept("extracting " + e.name() + " " + e.version() + " again: its cached copy " + dir
                    + " has no completion marker");
            try {
                FileTrees.delete(dir);
            } catch (IOException ex) {
                throw new ImageException("cannot remove the unmarked extraction " + dir + ": " + ex, ex);
            }
        }
        Path deb = deb(arch, e);
        progress.accept("extracting " + e.name() + " " + e.version());
        Path tmp = null;
        try {
            Files.createDirectories(dir.getParent());
            tmp = Files.createTempDirectory(dir.getParent(), ".x-");
            DebArchive.extract(deb, tmp, e.label());
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
            tmp = null;
            Files.writeString(done, e.label() + "\n");
        } catch (IOException ex) {
            throw new ImageException("cannot extract " + deb + " into " + dir + ": " + ex, ex);
        } finally {
            if (tmp != null) {
                FileTrees.deleteQuietly(tmp);
            }
        }
        return dir;
    }

    private PoolFetcher fetcher() {
        if (fetcher == null) {
            DebianMirrors m = DebianMirrors.resolve(env, etcApt);
            progress.accept("mirrors: " + m.archive() + " and " + m.security() + " (from " + m.origin() + ")");
            fetcher = new PoolFetcher(m);
        }
        return fetcher;
    }

    private static void delete(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            throw new ImageException("cannot delete " + p + ": " + e, e);
        }
    }

    static String mib(long bytes) {
        return String.format(java.util.Locale.ROOT, "%.1f MB", bytes / 1e6);
    }
}
