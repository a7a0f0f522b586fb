package io.qvm.internal.image;

import io.qvm.ImageFetchException;
import io.qvm.ImageNotFoundException;
import io.qvm.HostSetupException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.host.QvmVersion;
import io.qvm.protocol.image.Arch;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Finds the guest image for an architecture, verifies it, and says where it came from. The places,
 * in order:
 * <ol>
 * <li>{@link Source#EXPLICIT}: the image root a caller gave ({@code QemuVmBackend.Builder#imageDir}),
 *     {@code <root>/<arch>};</li>
 * <li>{@link Source#ENVIRONMENT}: {@code $QVM_IMAGE_DIR/<arch>};</li>
 * <li>{@link Source#USER_CACHE}: {@code <cache>/images/<arch>} ({@link QvmEnvironment#userImageRoot()});</li>
 * <li>{@link Source#MAVEN_REPOSITORY}: in the local Maven repository ({@link LocalMavenRepository}), the
 *     image artifact of this backend's own version ({@link QvmVersion}) for the architecture,
 *     {@code io/qvm/qvm-image/<v>/qvm-image-<v>-<arch>.zip} ({@link ImageArtifact}), unpacked into
 *     {@code <cache>/images-maven/<sha256>/<arch>/} ({@link ImageZip});</li>
 * <li>{@link Source#REMOTE_REPOSITORY}: only when a remote repository is named
 *     ({@value RemoteImageRepository#ENV} or {@link Builder#remoteRepository}; there is no default),
 *     the same artifact fetched from it into {@code <cache>/images-remote/} and accepted only if its
 *     size and SHA-256 are the ones this backend's own jar pins for its own version
 *     ({@link PinnedImages}, {@link RemoteImageRepository}), then unpacked as above. A version with
 *     no pins (every development build, every SNAPSHOT) fetches nothing: an
 *     {@link ImageFetchException} ({@code NOT_PINNED}) that says how to build the image locally.</li>
 * </ol>
 *
 * <p>The rules. The first two are places someone named: when one is set it is the only place
 * searched, and an image missing there is an {@link ImageNotFoundException} that says so — the
 * caller meant that directory, so no image is taken from elsewhere behind their back. The last
 * two are defaults: one that holds nothing for the architecture (no directory, no zip) is passed
 * over for the next. Everywhere, an image that is there is verified — every file against
 * {@code SHA256SUMS} and the manifest — and one that fails is a {@link HostSetupException}
 * ({@code IMAGE_INVALID}) naming the file and the fix: it is never skipped in favour of an image
 * further down, so a damaged or tampered image fails closed instead of quietly giving way to
 * another (older) one. No image anywhere is one {@link ImageNotFoundException} listing every place
 * searched, in order, with what each held, and the commands that fix it.
 *
 * <p>A resolver keeps no state: each {@link #resolve} searches and verifies afresh (the backend
 * resolves again only when a file its image rests on changed).
 */
public final class ImageResolver {

    /** Where an image was found. */
    public enum Source {
        EXPLICIT("the backend's image directory"),
        ENVIRONMENT("$" + QvmEnvironment.IMAGE_DIR),
        USER_CACHE("the user cache"),
        MAVEN_REPOSITORY("the local Maven repository"),
        REMOTE_REPOSITORY("the remote image repository");

        private final String label;

        Source(String label) {
            this.label = label;
        }

        /** How messages name it. */
        public String label() {
            return label;
        }
    }

    /**
     * One place searched and what it held.
     *
     * @param source which place
     * @param location the path looked at (empty when the place was not set)
     * @param found what was there, e.g. "not set", "no such directory"
     */
    public record Place(Source source, String location, String found) {
        public Place {
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(location, "location");
            Objects.requireNonNull(found, "found");
        }

        @Override
        public String toString() {
            return source.label() + (location.isEmpty() ? "" : " " + location) + ": " + found;
        }

        /** As {@link ImageNotFoundException#searched()} gives them to a caller. */
        static List<ImageNotFoundException.SearchedPlace> toPublic(List<Place> places) {
            return places.stream().map(p -> new ImageNotFoundException.SearchedPlace(p.source().label(), p.location(),
                    p.found())).toList();
        }
    }

    /**
     * A verified image and where it came from.
     *
     * @param source the place it was found in
     * @param image the verified image (its directory: for the Maven repository, the unpacked copy)
     * @param artifact the zip it was unpacked from ({@link Source#MAVEN_REPOSITORY} and
     *     {@link Source#REMOTE_REPOSITORY} only; for the latter, the fetched copy in the user cache)
     */
    public record Resolved(Source source, GuestImage image, Optional<Path> artifact) {
        public Resolved {
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(image, "image");
            Objects.requireNonNull(artifact, "artifact");
        }

        public Path dir() {
            return image.dir();
        }

        public Arch arch() {
            return image.arch();
        }

        /** Every file this image rests on: its verified files, then the zip it came from. */
        public List<Path> files() {
            List<Path> out = new ArrayList<>();
            image.sha256().keySet().stream().sorted().forEach(f -> out.add(image.dir().resolve(f)));
            artifact.ifPresent(out::add);
            return out;
        }

        /** One line for people: "x86_64 image from the user cache: /home/u/.cache/qvm/images/x86_64". */
        public String describe() {
            return image.arch().qemuName() + " image from " + source.label() + ": "
                    + artifact.map(z -> z + ", unpacked in " + image.dir()).orElse(image.dir().toString());
        }
    }

    private final Path explicit;
    private final QvmEnvironment env;
    private final LocalMavenRepository repository;
    private final Optional<String> version;
    private final ImageZip.Limits limits;
    private final URI remote;
    /** Null: this jar's, read when a fetch needs them. */
    private final Optional<PinnedImages> pins;
    private final Duration fetchTimeout;

    private ImageResolver(Builder b) {
        this.explicit = b.explicit;
        this.env = b.env != null ? b.env : QvmEnvironment.system();
        this.repository = b.repository;
        this.version = b.version != null ? Optional.of(b.version) : QvmVersion.current();
        this.limits = b.limits;
        this.remote = b.remote;
        this.pins = b.pins;
        this.fetchTimeout = b.fetchTimeout;
    }

    /** This process's resolver: its environment and local Maven repository, and {@code explicit} (null: none). */
    public static ImageResolver system(Path explicit) {
        Builder b = builder();
        if (explicit != null) {
            b.imageDir(explicit);
        }
        return b.build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * The verified image for {@code arch}, from the first place that has one.
     *
     * @throws ImageNotFoundException no image in a place that was named, or in any place
     * @throws HostSetupException {@code IMAGE_INVALID}: the first image found fails its checksums
     *     or is incomplete, a zip is unsafe, or the cache cannot be written
     * @throws ImageFetchException a remote repository is named and the image could not be fetched
     *     from it, is not pinned for this version, or is not the pinned bytes
     */
    public Resolved resolve(Arch arch) {
        Objects.requireNonNull(arch, "arch");
        List<Place> searched = new ArrayList<>();
        if (explicit != null) {
            return named(Source.EXPLICIT, explicit, arch, searched);
        }
        searched.add(new Place(Source.EXPLICIT, "", "not given"));
        Optional<Path> variable = env.imageDirVariable();
        if (variable.isPresent()) {
            return named(Source.ENVIRONMENT, variable.get(), arch, searched);
        }
        searched.add(new Place(Source.ENVIRONMENT, "", "not set"));

        Path cacheRoot = env.userImageRoot();
        Path cached = cacheRoot.resolve(arch.qemuName());
        if (Files.exists(cached, LinkOption.NOFOLLOW_LINKS)) {
            return new Resolved(Source.USER_CACHE, GuestImage.verify(cached, arch, "Rebuild it with: ./qvm image build"
                    + " --arch " + arch.qemuName() + " --out " + cacheRoot + ", or remove " + cached
                    + " to use the image of the local Maven repository (a damaged image is never skipped)"),
                    Optional.empty());
        }
        searched.add(new Place(Source.USER_CACHE, cached.toString(), "no such directory"));

        LocalMavenRepository repo = repository != null ? repository
                : LocalMavenRepository.locate(Optional.ofNullable(System.getProperty(LocalMavenRepository.PROPERTY)), env);
        String where = repo.root() + " (" + repo.how() + ")";
        if (version.isEmpty()) {
            searched.add(new Place(Source.MAVEN_REPOSITORY, where, "not searched: this backend's version is unknown (no "
                    + QvmVersion.RESOURCE + " on its class path)"));
        } else {
            Path zip = ImageArtifact.zip(repo, version.get(), arch);
            if (Files.exists(zip, LinkOption.NOFOLLOW_LINKS)) {
                String coordinates = ImageArtifact.coordinates(version.get(), arch);
                GuestImage image = ImageZip.open(zip, arch, env.mavenImageCache(), limits, "Install a sound copy: delete "
                        + zip + " and let Maven fetch " + coordinates + " again (mvn dependency:get -Dartifact="
                        + coordinates + "), or install it again from a qvm release");
                return new Resolved(Source.MAVEN_REPOSITORY, image, Optional.of(zip));
            }
            searched.add(new Place(Source.MAVEN_REPOSITORY, where, zip + " is not there"));
        }

        Optional<RemoteImageRepository> remoteRepo = RemoteImageRepository.configured(remote, env, fetchTimeout);
        if (remoteRepo.isEmpty()) {
            searched.add(new Place(Source.REMOTE_REPOSITORY, "", "not set ($" + RemoteImageRepository.ENV + ")"));
        } else if (version.isEmpty()) {
            searched.add(new Place(Source.REMOTE_REPOSITORY, remoteRepo.get().toString(), "not searched: this "
                    + "backend's version is unknown"));
        } else {
            return fetched(remoteRepo.get(), version.get(), arch);
        }
        throw notFound(arch, searched);
    }

    /** The pinned image of {@code version} from {@code repo}: fetched (or kept from before), checked, unpacked. */
    private Resolved fetched(RemoteImageRepository repo, String version, Arch arch) {
        String build = "Build the image on this host instead: in a qvm checkout, ./qvm image build --arch "
                + arch.qemuName() + " --out " + env.userImageRoot() + " (the user cache, searched before any "
                + "repository), or point " + QvmEnvironment.IMAGE_DIR + " at an image root";
        Optional<PinnedImages> known;
        try {
            known = pins != null ? pins : PinnedImages.bundled();
        } catch (IllegalStateException e) {
            throw new ImageFetchException(ImageFetchException.Reason.NOT_PINNED, "this backend's pins cannot be read ("
                    + e.getMessage() + "), so it fetches nothing from " + repo + ". " + build, e);
        }
        Optional<PinnedImages.Pin> pin = known.flatMap(p -> p.pin(version, arch));
        if (pin.isEmpty()) {
            String has = known.map(p -> p.source() + " are for version " + p.version() + " ("
                    + p.pins().keySet().stream().map(Arch::qemuName).toList() + ")")
                    .orElse("its jar carries no " + PinnedImages.RESOURCE);
            throw new ImageFetchException(ImageFetchException.Reason.NOT_PINNED, "this backend (version " + version
                    + ") pins no " + arch.qemuName() + " image: " + has + ", so it fetches nothing from " + repo
                    + " (a fetched image is trusted only against the hash the backend's own jar pins; development "
                    + "builds and SNAPSHOTs pin none). " + build + "; or use a released backend, whose jar pins its "
                    + "image", null);
        }
        Path zip = repo.fetch(version, arch, pin.get(), env.cacheDir().resolve(RemoteImageRepository.CACHE_DIR));
        GuestImage image = ImageZip.open(zip, arch, env.mavenImageCache(), limits, "It was fetched from "
                + repo.artifact(version, arch) + " and matched its pin; delete " + zip + " to fetch it again. " + build);
        Path unpackedUnder = image.dir().getParent().getFileName();
        if (!unpackedUnder.toString().equals(pin.get().sha256())) {
            // the zip was swapped between the pin check and the unpack: never boot what was not pinned
            throw new ImageFetchException(ImageFetchException.Reason.MISMATCH, zip + " changed after it was checked "
                    + "against its pin (unpacked copy " + image.dir() + " is of sha256 " + unpackedUnder + ", pinned "
                    + pin.get().sha256() + "): refused. Delete " + zip + " and try again", null);
        }
        return new Resolved(Source.REMOTE_REPOSITORY, image, Optional.of(zip));
    }

    /** A place someone named: the only one searched. */
    private static Resolved named(Source source, Path root, Arch arch, List<Place> searched) {
        Path dir = root.resolve(arch.qemuName());
        String fix = "Build it with: ./qvm image build --arch " + arch.qemuName() + " --out " + root;
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            searched.add(new Place(source, dir.toString(), "no such directory"));
            String unset = source == Source.ENVIRONMENT ? ": unset it to let the backend search the user cache and the "
                    + "local Maven repository" : "";
            throw new ImageNotFoundException(arch, Place.toPublic(searched), "no guest image for " + arch.qemuName() + " at " + dir
                    + " (" + source.label() + " is set, so it is the only place searched" + unset + "). " + fix);
        }
        return new Resolved(source, GuestImage.verify(dir, arch, fix), Optional.empty());
    }

    private ImageNotFoundException notFound(Arch arch, List<Place> searched) {
        StringBuilder m = new StringBuilder("no guest image for " + arch.qemuName()
                + " in any place the backend looks; searched, in order:");
        for (int i = 0; i < searched.size(); i++) {
            m.append("\n  ").append(i + 1).append(". ").append(searched.get(i));
        }
        String coordinates = ImageArtifact.coordinates(version.orElse("<the backend's version>"), arch);
        m.append("\nFix: make the server depend on ").append(coordinates)
                .append(" (Maven puts it into the local repository, where the backend finds it); or build one into the "
                        + "user cache in a qvm checkout: ./qvm image build --arch ").append(arch.qemuName())
                .append(" --out ").append(env.userImageRoot()).append("; or point ").append(QvmEnvironment.IMAGE_DIR)
                .append(" at an image root; or, with a released backend (whose jar pins its image), set $")
                .append(RemoteImageRepository.ENV).append(" to the Maven repository the release was deployed to.");
        return new ImageNotFoundException(arch, Place.toPublic(searched), m.toString());
    }

    /** Builder for {@link ImageResolver}; every default is this process's. */
    public static final class Builder {
        private Path explicit;
        private QvmEnvironment env;
        private LocalMavenRepository repository;
        private String version;
        private ImageZip.Limits limits = ImageZip.Limits.DEFAULT;
        private URI remote;
        private Optional<PinnedImages> pins;
        private Duration fetchTimeout = Duration.ofMinutes(30);

        private Builder() {
        }

        /** An image root to use, and then the only place searched (default: none). */
        public Builder imageDir(Path root) {
            this.explicit = Objects.requireNonNull(root, "root");
            return this;
        }

        /** The environment: {@code QVM_IMAGE_DIR}, the user cache, {@code QVM_MAVEN_REPO} (default {@link QvmEnvironment#system()}). */
        public Builder environment(QvmEnvironment environment) {
            this.env = Objects.requireNonNull(environment, "environment");
            return this;
        }

        /** The local Maven repository (default: located on each resolve, {@link LocalMavenRepository#locate}). */
        public Builder mavenRepository(LocalMavenRepository repo) {
            this.repository = Objects.requireNonNull(repo, "repo");
            return this;
        }

        /** The version of the image artifact to look for (default {@link QvmVersion#current()}, this backend's). */
        public Builder version(String v) {
            if (!QvmVersion.usable(v)) {
                throw new IllegalArgumentException("not a version a repository path can hold: '" + v + "'");
            }
            this.version = v;
            return this;
        }

        /** Caps on what an image zip may inflate to (default 512 MiB an entry, 1 GiB in all). */
        Builder zipLimits(long maxEntryBytes, long maxTotalBytes) {
            this.limits = new ImageZip.Limits(maxEntryBytes, maxTotalBytes);
            return this;
        }

        /**
         * The remote Maven repository to fetch the released image from when no other place has one
         * (default: {@value RemoteImageRepository#ENV}, else none).
         *
         * @throws IllegalArgumentException not an http(s) URL without user info, query or fragment
         */
        public Builder remoteRepository(URI url) {
            new RemoteImageRepository(url, fetchTimeout); // validates
            this.remote = url;
            return this;
        }

        /** The most a whole download from the remote repository may take (default 30 minutes). */
        public Builder fetchTimeout(Duration v) {
            if (v.isNegative() || v.isZero()) {
                throw new IllegalArgumentException("a fetch timeout is positive, got " + v);
            }
            this.fetchTimeout = v;
            return this;
        }

        /** The pins a fetched image is checked against (default {@link PinnedImages#bundled()}, this jar's); tests only. */
        Builder pins(Optional<PinnedImages> v) {
            this.pins = Objects.requireNonNull(v);
            return this;
        }

        public ImageResolver build() {
            return new ImageResolver(this);
        }
    }
}
