package io.qvm.image;

import io.qvm.protocol.image.Arch;
import io.qvm.image.PackageLock.Entry;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Fetches pinned packages into {@code $QVM_CACHE}, verifies them and extracts them.
 * <pre>
 *   $QVM_CACHE/debs/&lt;sha256&gt;.deb          verified .deb files, named by their hash
 *   $QVM_CACHE/extracted/&lt;sha256&gt;/         dpkg-deb -x of each
 *   $QVM_CACHE/apt/&lt;release&gt;-&lt;arch&gt;/       private apt states (see AptRepo)
 * </pre>
 * A cached .deb is re-hashed on every use; a wrong hash from the registry is an error naming the
 * package, both hashes and the command that refreshes the lock. Nothing touches the network when
 * every pinned package is already in the cache.
 */
public final class PackageStore {
    private final Path cache;
    private final Consumer<String> progress;
    private final Map<String, AptRepo> repos = new HashMap<>();
    private final Path etcApt;
    private HostAptSources.Mirrors mirrors;

    public PackageStore(Path cache, Consumer<String> progress) {
        this(cache, progress, Path.of("/etc/apt"));
    }

    /** @param etcApt where the host's apt sources are read from (normally /etc/apt) */
    PackageStore(Path cache, Consumer<String> progress, Path etcApt) {
        this.cache = cache;
        this.progress = progress;
        this.etcApt = etcApt;
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
        progress.accept("fetching " + e.name() + " " + e.version() + " (" + e.architecture() + ", "
                + mib(e.size()) + ") from " + e.suite());
        Path tmp;
        try {
            Files.createDirectories(target.getParent());
            tmp = Files.createTempDirectory(target.getParent(), ".dl-");
        } catch (IOException ex) {
            throw new ImageException("cannot create a download directory in " + cache + ": " + ex, ex);
        }
        try {
            Path deb = repo(arch, e.suite()).download(e, tmp);
            verify(e, deb);
            Files.move(deb, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return target;
        } catch (IOException ex) {
            throw new ImageException("cannot store " + e.label() + " in " + cache + ": " + ex, ex);
        } finally {
            FileTrees.deleteQuietly(tmp);
        }
    }

    /** Checks a downloaded .deb against the lock. */
    public static void verify(Entry e, Path deb) {
        String actual = Sha256.of(deb);
        if (!actual.equals(e.sha256())) {
            throw new ImageException("package " + e.label() + " from " + e.suite()
                    + " does not match the lock: expected sha256 " + e.sha256() + ", actual "
                    + actual + " (" + deb + "). If the registry legitimately changed, refresh the "
                    + "lock with " + PackageLock.REFRESH_COMMAND + " and review the diff.");
        }
    }

    /** {@code dpkg-deb -x} of the package, cached by hash. */
    public Path extracted(Arch arch, Entry e) {
        Path dir = cache.resolve("extracted").resolve(e.sha256());
        if (Files.isDirectory(dir)) {
            return dir;
        }
        Path deb = deb(arch, e);
        progress.accept("extracting " + e.name() + " " + e.version());
        try {
            Files.createDirectories(dir.getParent());
            Path tmp = Files.createTempDirectory(dir.getParent(), ".x-");
            Proc.check(List.of("dpkg-deb", "-x", deb.toString(), tmp.toString()), null);
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException ex) {
            throw new ImageException("cannot extract " + deb + " into " + dir + ": " + ex, ex);
        }
        return dir;
    }

    private AptRepo repo(Arch arch, String suite) {
        String release = suite.replaceAll("-(security|updates)$", "");
        return repos.computeIfAbsent(release + "/" + arch, k -> {
            if (mirrors == null) {
                mirrors = HostAptSources.mirrors(etcApt);
            }
            return new AptRepo(cache, release, arch, mirrors);
        });
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
