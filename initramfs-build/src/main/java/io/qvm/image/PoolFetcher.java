package io.qvm.image;

import io.qvm.image.PackageLock.Entry;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * Downloads a pinned .deb straight from a mirror's pool, without apt: the URL is
 * {@code <mirror base>/<entry.filename>} (the lock records apt's {@code Filename:}, e.g.
 * {@code pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb}, so the source package name, which
 * may differ from the binary's, is never guessed), the base chosen by the entry's suite
 * ({@link DebianMirrors#base}).
 *
 * <p>The bytes go to a temporary file beside the target, hashed as they arrive and cut off past
 * the size the lock records; only a file whose SHA-256 equals the pin is moved (atomically) to
 * the target. A mismatch is a {@link PackageHashMismatchException}; nothing partial stays.
 * No index is fetched and no signature checked: the lock's pins are the trust root (they were
 * taken from apt's signed indexes when the lock was made, see {@link Locker}).
 */
final class PoolFetcher {
    private static final Pattern POOL_PATH = Pattern.compile("pool/[A-Za-z0-9+._~%/-]+\\.deb");

    private final DebianMirrors mirrors;
    private final HttpClient http;

    PoolFetcher(DebianMirrors mirrors) {
        this.mirrors = mirrors;
        this.http = HttpClient.newBuilder()
                .followRedirects(HttpClient.Redirect.NORMAL)
                .connectTimeout(Duration.ofSeconds(30))
                .build();
    }

    /** The URL the entry is fetched from. */
    URI url(Entry e) {
        String f = e.filename();
        if (!POOL_PATH.matcher(f).matches() || f.contains("/../") || f.contains("/./")) {
            throw new UnsafePackageException(e.label(), f, "is not a pool path the lock may name");
        }
        return URI.create(mirrors.base(e.suite()) + "/" + f);
    }

    /** Downloads {@code e} to {@code target} (verified) or throws, leaving nothing behind. */
    void fetch(Entry e, Path target) {
        URI url = url(e);
        Path tmp = null;
        try {
            Files.createDirectories(target.getParent());
            tmp = Files.createTempFile(target.getParent(), ".dl-", ".part");
            String actual = copy(e, url, tmp);
            if (!actual.equals(e.sha256())) {
                throw new PackageHashMismatchException(e.label(), url.toString(), e.sha256(), actual);
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            tmp = null;
        } catch (IOException ex) {
            throw new PackageFetchException("cannot download " + e.label() + " from " + url + ": " + ex
                    + ". Is the mirror (" + mirrors.origin() + ") reachable?", ex);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // best effort; the name starts with '.' and is never read as a package
                }
            }
        }
    }

    private String copy(Entry e, URI url, Path tmp) throws IOException {
        if (url.getScheme().equalsIgnoreCase("file")) {
            try (InputStream in = Files.newInputStream(Path.of(url))) {
                return bounded(e, url, in, tmp);
            } catch (java.nio.file.NoSuchFileException nf) {
                throw notFound(e, url, "no such file");
            }
        }
        HttpResponse<InputStream> r;
        try {
            r = http.send(HttpRequest.newBuilder(url).GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            throw new PackageFetchException("interrupted while downloading " + e.label(), ie);
        }
        try (InputStream in = r.body()) {
            if (r.statusCode() != 200) {
                throw notFound(e, url, "HTTP " + r.statusCode());
            }
            return bounded(e, url, in, tmp);
        }
    }

    private static PackageFetchException notFound(Entry e, URI url, String why) {
        return new PackageFetchException("cannot download " + e.label() + " (" + e.suite() + "): "
                + url + " answered " + why + ". The mirror may no longer carry this version (Debian "
                + "drops superseded point-release and security versions): point "
                + DebianMirrors.ARCHIVE_ENV + "/" + DebianMirrors.SECURITY_ENV + " at a mirror that "
                + "does, or refresh the lock with " + PackageLock.REFRESH_COMMAND, null);
    }

    /** Copies at most the lock's size (+1 to notice more) while hashing; the SHA-256 of what it copied. */
    private static String bounded(Entry e, URI url, InputStream in, Path tmp) throws IOException {
        io.qvm.protocol.util.Sha256.Copied c = io.qvm.protocol.util.Sha256.copy(in, tmp,
                e.size() > 0 ? e.size() : Long.MAX_VALUE);
        if (c.overLimit()) {
            throw new PackageFetchException("refusing " + e.label() + " from " + url + ": more "
                    + "than the " + e.size() + " bytes the lock pins", null);
        }
        return c.sha256();
    }
}
