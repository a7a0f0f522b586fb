package io.qvm.internal.image;

import io.qvm.ImageFetchException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.protocol.util.Sha256;
import io.qvm.protocol.util.UnsafeDirectoryException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * A remote Maven repository the released image is fetched from, in the standard layout
 * {@code qvm release --deploy-url} deploys to (adr/0011):
 * <pre>
 * &lt;url&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;-&lt;arch&gt;.zip
 * </pre>
 * Named by {@value #ENV} or {@code QemuVmBackend.Builder}; there is no default, the project names
 * no host. What is fetched is trusted only because of the {@link PinnedImages.Pin} the backend's
 * own jar carries for its own version: the download is streamed into a temporary file next to its
 * target in the private directory {@code <cache>/images-remote}, hashed as it arrives and cut off
 * past the pinned size, and renamed into place only when its size and SHA-256 are the pinned ones.
 * Anything else — another hash, fewer or more bytes, a status other than 200, a connection that
 * breaks — deletes the temporary file and is an {@link ImageFetchException}: no partial or refused
 * file is ever left where the resolver would look. Since the pin decides, {@code http} is accepted
 * as well as {@code https} (the transport adds no trust; a mirror on a LAN may be plain).
 *
 * <p>No credentials are sent: a released image is public. A repository that needs them is served
 * through a proxy of the server's own, or fetched by Maven into the local repository instead.
 */
final class RemoteImageRepository {

    /** The environment variable naming the repository's base URL (e.g. {@code https://repo.example/releases}). */
    public static final String ENV = io.qvm.internal.host.QvmEnvironment.IMAGE_REPOSITORY;
    /** Where fetched zips are kept: a private directory in the user cache. */
    public static final String CACHE_DIR = "images-remote";
    private static final String PART_PREFIX = ".fetch-";

    private final URI base;
    private final Duration timeout;

    /**
     * @param base the repository's base URL, {@code http} or {@code https}, without user info,
     *     query or fragment
     * @param timeout the most a whole download may take
     * @throws IllegalArgumentException a URL that is not such a base
     */
    public RemoteImageRepository(URI base, Duration timeout) {
        Objects.requireNonNull(base, "base");
        String scheme = base.getScheme() == null ? "" : base.getScheme().toLowerCase(Locale.ROOT);
        if (!(scheme.equals("https") || scheme.equals("http")) || base.getHost() == null) {
            throw new IllegalArgumentException("an image repository is an http(s) URL with a host, got '" + base + "'");
        }
        if (base.getRawUserInfo() != null || base.getRawQuery() != null || base.getRawFragment() != null) {
            throw new IllegalArgumentException("an image repository URL has no user info, query or fragment, got '"
                    + base.getScheme() + "://" + base.getHost() + "…'");
        }
        String path = base.getRawPath() == null || base.getRawPath().isEmpty() ? "/" : base.getRawPath();
        this.base = base.resolve(path.endsWith("/") ? path : path + "/");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("a fetch timeout is positive, got " + timeout);
        }
        this.timeout = timeout;
    }

    /**
     * The repository {@code url} names, else {@value #ENV}, else none.
     *
     * @throws ImageFetchException {@code UNAVAILABLE}: the variable is not an http(s) URL
     */
    static Optional<RemoteImageRepository> configured(URI url, QvmEnvironment env, Duration timeout) {
        if (url != null) {
            return Optional.of(new RemoteImageRepository(url, timeout));
        }
        Optional<String> v = env.get(ENV);
        if (v.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(new RemoteImageRepository(new URI(v.get().strip()), timeout));
        } catch (URISyntaxException | IllegalArgumentException e) {
            throw new ImageFetchException(ImageFetchException.Reason.UNAVAILABLE, "$" + ENV + " is not an image "
                    + "repository URL: " + e.getMessage() + ". Set it to the base URL of the Maven repository qvm "
                    + "releases are deployed to (https://host/path), or unset it", e);
        }
    }

    /** The base URL, ending in {@code /}. */
    public URI base() {
        return base;
    }

    /** {@code <base>/io/qvm/qvm-image/<v>/qvm-image-<v>-<arch>.zip}. */
    public URI artifact(String version, Arch arch) {
        return base.resolve(ImageArtifact.GROUP_ID.replace('.', '/') + "/" + ImageArtifact.ARTIFACT_ID + "/" + version
                + "/" + fileName(version, arch));
    }

    /** {@code qvm-image-<v>-<arch>.zip}: the name the fetched zip has in the cache too. */
    static String fileName(String version, Arch arch) {
        return ImageArtifact.ARTIFACT_ID + "-" + version + "-" + arch.qemuName() + "." + ImageArtifact.EXTENSION;
    }

    /**
     * The zip of {@code version} for {@code arch} in {@code dir}: the copy fetched before if it
     * still matches {@code pin}, else fetched now.
     *
     * @throws ImageFetchException {@code MISMATCH}: the bytes served, or the copy kept, are not
     *     the pinned ones (deleted); {@code UNAVAILABLE}: no 200, a broken connection, or the
     *     directory cannot be written
     */
    Path fetch(String version, Arch arch, PinnedImages.Pin pin, Path dir) {
        URI url = artifact(version, arch);
        try {
            PrivateDirectory.ensure(dir);
        } catch (UnsafeDirectoryException e) {
            throw unavailable(e.getMessage() + " (qvm keeps fetched images there; set QVM_CACHE to a directory of its "
                    + "own to use another)", e);
        } catch (IOException e) {
            throw unavailable("cannot create " + dir + ": " + e + ". Make it writable, or point QVM_CACHE at a "
                    + "directory you own", e);
        }
        Path target = dir.resolve(fileName(version, arch));
        if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
            checkKept(target, url, pin);
            return target;
        }
        Path part = null;
        try {
            removeStaleParts(dir);
            part = Files.createTempFile(dir, PART_PREFIX, ".part");
            download(url, pin, part);
            Files.move(part, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            part = null;
            return target;
        } catch (IOException e) {
            throw unavailable("cannot fetch " + url + " into " + dir + ": " + e + ". Check that the repository is "
                    + "reachable from this host and try again", e);
        } finally {
            if (part != null) {
                try {
                    Files.deleteIfExists(part);
                } catch (IOException ignored) {
                    // the next fetch removes it (removeStaleParts)
                }
            }
        }
    }

    /** Streams {@code url} into {@code part}, refusing anything but exactly the pinned bytes. */
    private void download(URI url, PinnedImages.Pin pin, Path part) throws IOException {
        HttpClient client = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
                .connectTimeout(Duration.ofSeconds(30)).build();
        HttpRequest request = HttpRequest.newBuilder(url).timeout(timeout).GET().build();
        HttpResponse<InputStream> response;
        try {
            response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        Sha256.Copied copied;
        try (InputStream in = response.body()) {
            if (response.statusCode() != 200) {
                throw unavailable("the image repository answered HTTP " + response.statusCode() + " for " + url
                        + (response.statusCode() == 404 ? ": this release's image was not deployed there. Deploy it "
                        + "(qvm release --deploy-url) or point $" + ENV + " at the repository that has it"
                        : ". Check the URL in $" + ENV + " and that the repository serves it without credentials"),
                        null);
            }
            copied = Sha256.copy(in, part, pin.size());
        }
        if (copied.overLimit()) {
            throw mismatch(url + " serves more than the " + pin.size() + " bytes this backend pins: refused "
                    + "and deleted, cut off unread", null);
        }
        long n = copied.bytes();
        String got = copied.sha256();
        if (n != pin.size() || !got.equals(pin.sha256())) {
            throw mismatch(url + " served " + n + " bytes with sha256 " + got + ", but this backend pins " + pin.size()
                    + " bytes with sha256 " + pin.sha256() + ": refused and deleted. The repository does not hold the "
                    + "released image (replaced, damaged, or not this release's): fix the repository, or build the "
                    + "image locally", null);
        }
    }

    /** A zip fetched before: kept only while it is still exactly the pinned bytes. */
    private static void checkKept(Path target, URI url, PinnedImages.Pin pin) {
        String got;
        long size;
        try {
            size = Files.size(target);
            got = size == pin.size() ? Sha256.of(target) : "(not hashed)";
        } catch (IOException e) {
            throw unavailable("cannot read the fetched image " + target + ": " + e, e);
        }
        if (size != pin.size() || !got.equals(pin.sha256())) {
            String deleted;
            try {
                Files.deleteIfExists(target);
                deleted = "deleted; the next use fetches it again from " + url;
            } catch (IOException e) {
                deleted = "could not delete it (" + e + "): remove it by hand";
            }
            throw mismatch("the image fetched before, " + target + ", is " + size + " bytes with sha256 " + got
                    + ", not the pinned " + pin.size() + " bytes with sha256 " + pin.sha256() + " (modified since it "
                    + "was fetched): refused and " + deleted, null);
        }
    }

    /** Removes temporary files a process that died left (none is in use by a live fetch for long). */
    private static void removeStaleParts(Path dir) throws IOException {
        try (var s = Files.newDirectoryStream(dir, PART_PREFIX + "*.part")) {
            for (Path p : s) {
                if (Files.getLastModifiedTime(p).toInstant().isBefore(java.time.Instant.now().minus(Duration.ofHours(6)))) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    private static ImageFetchException unavailable(String message, Throwable cause) {
        return new ImageFetchException(ImageFetchException.Reason.UNAVAILABLE, message, cause);
    }

    private static ImageFetchException mismatch(String message, Throwable cause) {
        return new ImageFetchException(ImageFetchException.Reason.MISMATCH, message, cause);
    }

    @Override
    public String toString() {
        return base.toString();
    }
}
