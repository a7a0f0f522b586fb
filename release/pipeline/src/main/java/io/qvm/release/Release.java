package io.qvm.release;

import io.qvm.admin.ImageArtifacts;
import io.qvm.admin.QvmLibrary;
import io.qvm.HostSetupException;
import io.qvm.image.ImageInfo;
import io.qvm.image.PackageLock;
import io.qvm.image.PackageStore;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.image.ImageManifest;
import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.eclipse.aether.artifact.Artifact;

/**
 * qvm's release pipeline: it never publishes an image it has not proven on this host.
 *
 * <pre>
 * Release.Result r = Release.builder()
 *         .outDir(Path.of("out/release"))
 *         .gate(new HostGate(HostGate.Options.defaults()))
 *         .progress(System.err::println)
 *         .build()
 *         .run();
 * if (!r.ok()) System.err.println(r.failure().orElseThrow());
 * </pre>
 *
 * <p>The steps, in order, each recorded as a {@link ReleaseStep} with its evidence; the first that
 * fails ends the run:
 * <ol>
 * <li>{@code lock}: the lock pins every role for every architecture, the worker jar exists,
 *     {@code OUT/<version>} does not (a release directory is never overwritten), and the Maven
 *     repository holds no {@code io.qvm:qvm-image:<version>} unless it is a {@code -SNAPSHOT} (which
 *     the release replaces); when it installs or deploys, the library artifacts of the checkout
 *     ({@link LibraryArtifacts}: the parent's and the BOM's POM, each library's POM, jar, sources
 *     and javadoc jar) are built at this version and not installed already unless it is a
 *     SNAPSHOT, and are copied into the staging that starts in {@code OUT/.staging-<random>};</li>
 * <li>per architecture {@code build:<arch>} (from the user's package cache) and
 *     {@code reproduce:<arch>}: a second full build from a fresh cache seeded with the same
 *     verified .debs only (every package extracted again), compared with the first byte for byte
 *     ({@link Reproducibility});</li>
 * <li>per architecture {@code sbom:<arch>}: {@code sbom.cdx.json} ({@link ImageSbom});</li>
 * <li>{@code stage}: {@code OUT/.staging-*}/{@code <version>/<arch>/} and the release's
 *     {@code SHA256SUMS} ({@link Checksums}); the SHA-256 of every staged file, the checksum files
 *     included, is kept in memory;</li>
 * <li>{@code gate}: the {@link ReleaseGate} on the staged files (its steps are recorded as
 *     {@code gate:<arch>:<step>}); it must pass, with a passed {@code <arch>:boot} for every staged
 *     architecture;</li>
 * <li>{@code verify-staged}: every staged file against the SHA-256 kept at staging (not against
 *     the staged checksum files, which whatever changed a file could have rewritten too), and each
 *     image directory as the backend verifies it;</li>
 * <li>{@code publish}: the staged {@code <version>} directory moved to {@code OUT/<version>} in one
 *     rename;</li>
 * <li>{@code maven-install}: the POM, and per architecture the zip and the manifest, and the
 *     library artifacts, each with its {@code .asc} signature when the release signs, into the
 *     local Maven repository ({@link MavenInstaller}), once the zip's entries and the manifest match
 *     the SHA-256 kept at staging; a failure here (or later) puts the repository back as it was
 *     ({@link MavenInstaller.Undo}) and removes the published directory;</li>
 * <li>{@code pins}: {@code OUT/<version>/pinned-images.properties} ({@link ImageArtifacts#formatPins}), the
 *     SHA-256 and size of each architecture's zip — the file a backend of this version is built
 *     with, so that it fetches exactly these zips (adr/0011);</li>
 * <li>{@code report}: {@code release.json} and {@code release.md} ({@link ReleaseReport}) in
 *     {@code OUT/<version>}, added to its {@code SHA256SUMS} with the pins;</li>
 * <li>{@code deploy} (only with a {@link Builder#deploy deploy target}): the same artifacts the
 *     install holds, their checksums and signatures, then the merged {@code maven-metadata.xml},
 *     to the remote repository ({@link MavenDeployer}). It is the last step because it is the one
 *     that cannot be taken back: a failure here rolls the local release back like any other, and
 *     its evidence says what reached the repository (artifacts, never metadata).</li>
 * </ol>
 * Whatever happens, the staging directory is removed; a failed release leaves {@code OUT} and the
 * Maven repository as they were, also when a step throws an {@link Error} (which {@link #run}
 * then rethrows).
 */
public final class Release {

    /** The system property naming the checkout whose library artifacts a release publishes ({@link Builder#defaultReactor()}). */
    public static final String REACTOR_PROPERTY = "qvm.release.reactor";

    /** Why a release without the reproduce step may not install, and what to do. */
    public static final String SKIP_REPRODUCE_INSTALLS = "a release that skips the reproduce step builds each image "
            + "once and proves nothing about what its pinned inputs make (a tampered input builds the same bad image "
            + "on every try, but only a second build from freshly extracted packages shows a cache that changed): it "
            + "must not install into a Maven repository, where the backend would boot it. Drop --skip-reproduce "
            + "(reproduce(true)), or add --no-install (install(false)) for a quick try that only publishes to OUT";

    /** The architectures a release builds, in order. */
    public static final List<Arch> ARCHS = List.of(Arch.X86_64, Arch.AARCH64);

    /**
     * One architecture as released.
     *
     * @param arch the architecture
     * @param sizes staged file → bytes, by name
     * @param sha256 staged file → SHA-256, by name
     * @param debianPackages Debian packages in its SBOM
     * @param licensedPackages of those, how many name a licence
     * @param mavenArtifacts Maven artifacts in its SBOM (the worker jar and its closure)
     */
    public record ArchSummary(Arch arch, Map<String, Long> sizes, Map<String, String> sha256, int debianPackages,
            int licensedPackages, int mavenArtifacts) {
        public ArchSummary {
            sizes = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(sizes));
            sha256 = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(sha256));
        }
    }

    /**
     * What a release did.
     *
     * @param version the release version
     * @param started when it started
     * @param millis how long it took
     * @param ok whether every step passed and the release is published
     * @param steps every step that ran, in order (the gate's as {@code gate:...})
     * @param gate the gate's result, if the gate ran
     * @param archs per architecture, what was staged (in release order; those that got that far)
     * @param reproduced whether each architecture was built twice and compared
     * @param outDir the output directory
     * @param published {@code OUT/<version>} when published
     * @param mavenRepository the local repository installed into (or that would have been)
     * @param mavenFiles the artifacts installed there (empty unless published)
     */
    public record Result(String version, Instant started, long millis, boolean ok, List<ReleaseStep> steps,
            Optional<GateResult> gate, List<ArchSummary> archs, boolean reproduced, Path outDir,
            Optional<Path> published, Path mavenRepository, List<Path> mavenFiles) {
        public Result {
            steps = List.copyOf(steps);
            archs = List.copyOf(archs);
            mavenFiles = List.copyOf(mavenFiles);
        }

        /** The step that failed, if one did. */
        public Optional<ReleaseStep> failure() {
            return steps.stream().filter(s -> !s.ok()).findFirst();
        }
    }

    private final String version;
    private final Path outDir;
    private final List<Arch> archs;
    private final Path mavenRepo;
    private final boolean reproduce;
    private final boolean install;
    private final ReleaseSigner signer;
    private final MavenDeployer.Target deploy;
    private final PackageLock lock;
    private final Path workerJar;
    private final Path reactor;
    private final ImageFactory images;
    private final Path cache;
    private final ReleaseGate gate;
    private final Consumer<String> progress;
    private final String host;

    private Release(Builder b) {
        this.version = b.version != null ? b.version : projectVersion();
        this.outDir = b.outDir.toAbsolutePath().normalize();
        this.archs = b.archs;
        this.mavenRepo = MavenInstaller.localRepository(b.mavenRepo);
        this.reproduce = b.reproduce;
        this.install = b.install;
        this.signer = b.signer;
        this.deploy = b.deploy;
        this.lock = b.lock != null ? b.lock : PackageLock.bundled();
        this.workerJar = b.workerJar;
        this.reactor = b.reactor;
        this.images = b.images != null ? b.images : new BuilderImages(lock, workerJar);
        this.cache = b.cache;
        this.gate = Objects.requireNonNull(b.gate, "a release needs its gate: builder().gate(...)");
        this.progress = b.progress;
        this.host = b.host;
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * The project's version, as the build wrote it for the backend ({@link QvmLibrary#version()}): the
     * version the backend's image resolver looks for in a Maven repository.
     *
     * @throws IllegalStateException the class path has no filled-in version (not built by Maven)
     */
    public static String projectVersion() {
        return QvmLibrary.version().orElseThrow(() -> new IllegalStateException("no project version on the class "
                + "path (" + QvmLibrary.VERSION_RESOURCE + "): build qvm with Maven, or give the release a --version"));
    }

    /** Runs every step; never throws for a step that failed (see {@link Result#failure()}). */
    public Result run() {
        return new Run().run();
    }

    /** Thrown inside {@link Run} when a step failed (already recorded): ends the run. */
    private static final class Stop extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Stop() {
            super(null, null, false, false);
        }
    }

    /** One run's state. */
    private final class Run {
        final Instant started = Instant.now();
        final long t0 = System.nanoTime();
        final List<ReleaseStep> steps = new ArrayList<>();
        final Map<Arch, ArchSummary> summaries = new LinkedHashMap<>();
        final Map<Arch, ImageSbom.Result> sboms = new LinkedHashMap<>();
        GateResult gateResult;
        Path staging;
        /** Staged path → SHA-256, as hashed at staging (the release's own SHA256SUMS included). */
        Map<String, String> recorded;
        Path published;
        MavenInstaller.Undo undo;
        MavenInstaller.Installed installed;
        /** The Maven artifacts, written once from the published directory and checked against staging. */
        Artifacts artifacts;
        /** The library artifacts (adr/0013), copied into staging at lock; empty when nothing is installed or deployed. */
        List<Artifact> libraries = List.of();

        Result run() {
            try {
                step("lock", this::lock);
                for (Arch a : archs) {
                    step("build:" + a.id(), () -> build(a));
                    if (reproduce) {
                        step("reproduce:" + a.id(), () -> reproduce(a));
                    }
                }
                for (Arch a : archs) {
                    step("sbom:" + a.id(), () -> sbom(a));
                }
                StagedImages staged = stage();
                gate(staged);
                step("verify-staged", () -> verifyStaged(staged));
                step("publish", () -> publish(staged));
                if (install) {
                    step("maven-install", this::mavenInstall);
                }
                step("pins", this::pins);
                step("report", this::report);
                if (deploy != null) {
                    step("deploy", this::deploy);
                }
            } catch (Throwable t) {
                rollBack();
                if (!(t instanceof Stop)) {
                    throw t;
                }
            } finally {
                if (staging != null) {
                    FileTrees.deleteQuietly(staging);
                }
            }
            return result();
        }

        Result result() {
            boolean ok = steps.stream().allMatch(ReleaseStep::ok) && published != null;
            return new Result(version, started, (System.nanoTime() - t0) / 1_000_000, ok, steps,
                    Optional.ofNullable(gateResult), List.copyOf(summaries.values()), reproduce, outDir,
                    Optional.ofNullable(ok ? published : null), mavenRepo,
                    ok && installed != null ? installed.files() : List.of());
        }

        void step(String name, Supplier<String> body) {
            progress.accept(name + " …");
            long s = System.nanoTime();
            String evidence;
            boolean ok;
            try {
                evidence = body.get();
                ok = true;
            } catch (RuntimeException e) {
                evidence = whatFailed(e);
                ok = false;
            }
            long ms = (System.nanoTime() - s) / 1_000_000;
            ReleaseStep step = new ReleaseStep(name, ok, ms, evidence == null || evidence.isBlank() ? "(none)" : evidence);
            steps.add(step);
            progress.accept((ok ? "ok " : "FAILED ") + name + String.format(java.util.Locale.ROOT, " (%.1f s): ", ms / 1000.0)
                    + firstLine(step.evidence()));
            if (!ok) {
                throw new Stop();
            }
        }

        // ---- steps ------------------------------------------------------------------------------

        String lock() {
            if (archs.isEmpty()) {
                throw new ReleaseException("no architecture to release");
            }
            StringBuilder sb = new StringBuilder();
            for (Arch a : archs) {
                List<PackageLock.Entry> entries = lock.entries(a);
                for (PackageLock.Role r : PackageLock.Role.values()) {
                    if (r != PackageLock.Role.LIBRARY) {
                        lock.one(a, r);
                    }
                }
                sb.append(a.id()).append(": ").append(entries.size()).append(" pinned packages; ");
            }
            if (!Files.isRegularFile(workerJar)) {
                throw new ReleaseException("the worker jar " + workerJar + " does not exist: build it with "
                        + "mvn -pl renderer-worker -am package");
            }
            Path target = outDir.resolve(version);
            if (Files.exists(target)) {
                throw new ReleaseException(target + " exists already: a release directory is never overwritten; "
                        + "remove it or release another --version");
            }
            String replaces = install ? checkRepository() : "; not installed into a Maven repository (install off)";
            LibraryArtifacts found = install || deploy != null ? LibraryArtifacts.fromReactor(reactor, version) : null;
            if (found != null && install) {
                checkLibraries(found);
            }
            try {
                Files.createDirectories(outDir);
                staging = Files.createTempDirectory(outDir, ".staging-");
            } catch (IOException e) {
                throw new ReleaseException("cannot create a staging directory in " + outDir + ": " + e, e);
            }
            if (found != null) {
                try {
                    libraries = copy(found.artifacts(), staging.resolve("libraries"));
                } catch (IOException e) {
                    throw new ReleaseException("cannot copy the library artifacts into " + staging + ": " + e, e);
                }
            }
            return sb + "worker jar " + workerJar + "; version " + version + "; staging in " + staging + replaces
                    + (found != null ? "; with the libraries " + found + " (" + libraries.size() + " artifacts)"
                    : "; no libraries (neither installed nor deployed)");
        }

        /** Refuses to overwrite a released (not SNAPSHOT) library in the Maven repository, as for the image. */
        void checkLibraries(LibraryArtifacts found) {
            if (MavenInstaller.isSnapshot(version)) {
                return;
            }
            for (Artifact a : found.artifacts()) {
                Path there = MavenInstaller.path(mavenRepo, a);
                if (Files.exists(there)) {
                    throw new ReleaseException(mavenRepo + " holds " + there.getFileName() + " already: an installed "
                            + "release is never overwritten; remove " + there.getParent() + " or release another --version");
                }
            }
        }

        /** Copies {@code artifacts}' files into {@code dir}: what is published is what was checked at lock. */
        List<Artifact> copy(List<Artifact> artifacts, Path dir)
                throws IOException {
            Files.createDirectories(dir);
            List<Artifact> out = new ArrayList<>();
            for (Artifact a : artifacts) {
                Path copy = dir.resolve(MavenInstaller.path(dir, a).getFileName());
                Files.copy(a.getPath(), copy);
                out.add(a.setPath(copy));
            }
            return out;
        }

        /**
         * Refuses a version the Maven repository holds already, unless it is a SNAPSHOT: a release
         * replaces that one (and puts it back if it fails). Says so when it will.
         */
        String checkRepository() {
            Optional<Path> there = MavenInstaller.installed(mavenRepo, version);
            if (there.isEmpty()) {
                return "";
            }
            if (!MavenInstaller.isSnapshot(version)) {
                throw new ReleaseException(there.get().getParent() + " holds " + MavenInstaller.GROUP + ":"
                        + MavenInstaller.ARTIFACT + ":" + version + " already (" + there.get().getFileName() + "): an "
                        + "installed release is never overwritten; remove that directory or release another --version");
            }
            return "; replaces the installed " + version + " in " + mavenRepo + " (put back if the release fails)";
        }

        /**
         * The first build, from a fresh package cache seeded with nothing but the verified .debs of
         * the user's: every package is extracted again, so a tree in the user's cache that changed
         * since it was extracted (the ordinary {@code qvm image build} reuses those trees) never
         * reaches a release, with or without the reproduce step. The SBOM reads its copyright files
         * from these trees too.
         */
        String build(Arch a) {
            Path fresh = firstCache(a);
            images.seed(a, cache, fresh, line -> progress.accept("  " + line));
            Path dir = images.build(a, staging.resolve("build-1"), fresh, line -> progress.accept("  " + line));
            return describeImage(dir) + " (from a fresh package cache: every package extracted again from its "
                    + "verified .deb)";
        }

        /** The package cache of {@code a}'s first build, inside the staging directory. */
        Path firstCache(Arch a) {
            return staging.resolve("cache-1-" + a.id());
        }

        String reproduce(Arch a) {
            Path fresh = staging.resolve("cache-2-" + a.id());
            Path out = staging.resolve("build-2");
            try {
                images.seed(a, cache, fresh, line -> progress.accept("  " + line));
                images.build(a, out, fresh, line -> progress.accept("  " + line));
                List<Reproducibility.Difference> d = Reproducibility.compare(
                        staging.resolve("build-1").resolve(a.id()), out.resolve(a.id()));
                String text = Reproducibility.describe(d, out.resolve(a.id()));
                if (!d.isEmpty()) {
                    throw new ReleaseException("the " + a + " image is not reproducible: " + text);
                }
                return text + " (the second from a fresh package cache: every package extracted again)";
            } finally {
                FileTrees.deleteQuietly(out.resolve(a.id()));
                FileTrees.deleteQuietly(fresh);
            }
        }

        String sbom(Arch a) {
            Path dir = staging.resolve("build-1").resolve(a.id());
            ImageManifest manifest = readManifest(dir);
            List<PackageLock.Entry> entries = lock.entries(a);
            Map<PackageLock.Entry, Path> roots = new LinkedHashMap<>();
            for (PackageLock.Entry e : entries) {
                roots.put(e, images.extracted(a, e, firstCache(a)));
            }
            Map<String, List<String>> licenses = new LinkedHashMap<>();
            for (Map.Entry<PackageLock.Entry, Path> r : roots.entrySet()) {
                try {
                    List<String> l = DebianCopyright.licenses(r.getKey().name(), r.getValue(), roots.values());
                    if (!l.isEmpty()) {
                        licenses.put(r.getKey().name(), l);
                    }
                } catch (IOException e) {
                    throw new ReleaseException("cannot read the copyright of " + r.getKey().label() + ": " + e, e);
                }
            }
            ImageSbom.Result sbom = ImageSbom.create(new ImageSbom.Inputs(a, version, manifest, entries, licenses,
                    WorkerBom.fromImage(dir, manifest)));
            try {
                Files.writeString(dir.resolve(ImageSbom.FILE), sbom.json());
            } catch (IOException e) {
                throw new ReleaseException("cannot write " + dir.resolve(ImageSbom.FILE) + ": " + e, e);
            }
            sboms.put(a, sbom);
            return ImageSbom.FILE + ": " + sbom.debianPackages() + " Debian packages (" + licenses.size()
                    + " name their licences), " + sbom.mavenArtifacts() + " Maven artifacts (the worker jar and its "
                    + "closure); CycloneDX " + ImageSbom.SPEC + ", valid against its schema";
        }

        StagedImages stage() {
            StagedImages[] out = new StagedImages[1];
            step("stage", () -> {
                Path root = staging.resolve(version);
                try {
                    Files.createDirectories(root);
                    for (Arch a : archs) {
                        Files.move(staging.resolve("build-1").resolve(a.id()), root.resolve(a.id()));
                    }
                    String signed = signer != null ? signStaged(root) : "";
                    Map<String, String> sums = Checksums.write(root);
                    recorded = new TreeMap<>(sums);
                    recorded.put(Checksums.FILE, Sha256.of(root.resolve(Checksums.FILE)));
                    StringBuilder sb = new StringBuilder(sums.size() + " files in " + root + ", recorded in "
                            + Checksums.FILE + ":");
                    for (Arch a : archs) {
                        ImageDirectory.Verified v = ImageDirectory.verify(root.resolve(a.id()), a);
                        if (!v.ok()) {
                            throw new ReleaseException("the staged " + a + " image does not verify: " + v.problems());
                        }
                        Map<String, Long> sizes = new LinkedHashMap<>();
                        Map<String, String> hashes = new LinkedHashMap<>();
                        for (String f : files(root.resolve(a.id()))) {
                            sizes.put(f, Files.size(root.resolve(a.id()).resolve(f)));
                            hashes.put(f, sums.get(a.id() + "/" + f));
                        }
                        ImageSbom.Result s = sboms.get(a);
                        summaries.put(a, new ArchSummary(a, sizes, hashes, s.debianPackages(),
                                (int) s.bom().getComponents().stream().filter(c -> "debian".equals(ecosystem(c)))
                                        .filter(c -> c.getLicenses() != null).count(), s.mavenArtifacts()));
                        sb.append("\n  ").append(a.id()).append(": ").append(sizes);
                    }
                    out[0] = new StagedImages(version, root, archs);
                    return sb + signed;
                } catch (IOException e) {
                    throw new ReleaseException("cannot stage into " + root + ": " + e, e);
                }
            });
            return out[0];
        }

        /**
         * Signs each image's {@code SHA256SUMS} ({@code <arch>/SHA256SUMS.asc}, which the backend
         * checks when it is given the public key) and checks each signature as the backend would.
         */
        String signStaged(Path root) throws IOException {
            Path pub = signer.writePublicKey(staging.resolve("signing-key.pub.asc"));
            for (Arch a : archs) {
                Path dir = root.resolve(a.id());
                signer.signSums(dir);
                try {
                    ImageArtifacts.checkSignature(dir, a, pub, "the staged image");
                } catch (HostSetupException e) {
                    throw new ReleaseException("the signature of the staged " + a + " image does not verify: "
                            + e.getMessage(), e);
                }
            }
            return "\n  each image's " + Checksums.FILE + " signed by " + signer.fingerprint() + " ("
                    + ImageArtifacts.SIGNATURE_FILE + ", verified as the backend verifies it)";
        }

        void gate(StagedImages staged) {
            step("gate", () -> {
                GateResult g = gate.run(staged, line -> progress.accept("  " + line));
                if (g == null) {
                    throw new ReleaseException("the " + gate.name() + " gate returned no result");
                }
                gateResult = g;
                for (ReleaseStep s : g.steps()) {
                    steps.add(new ReleaseStep("gate:" + s.name(), s.ok(), s.millis(), s.evidence()));
                }
                Optional<ReleaseStep> failed = g.firstFailure();
                if (failed.isPresent()) {
                    throw new ReleaseException("the " + g.gate() + " gate failed at gate:" + failed.get().name() + ": "
                            + failed.get().evidence());
                }
                for (Arch a : staged.archs()) {
                    String boot = a.id() + ":boot";
                    if (g.steps().stream().noneMatch(s -> s.ok() && s.name().equals(boot))) {
                        throw new ReleaseException("the " + g.gate() + " gate did not boot " + a.id() + " (no passed gate:"
                                + boot + " step)");
                    }
                }
                return "the " + g.gate() + " gate passed all " + g.steps().size() + " steps";
            });
        }

        String verifyStaged(StagedImages staged) {
            List<String> problems = new ArrayList<>(Checksums.verify(staged.root(), recorded));
            for (Arch a : archs) {
                problems.addAll(ImageDirectory.verify(staged.dir(a), a).problems());
            }
            if (!problems.isEmpty()) {
                throw new ReleaseException("the staged files are not what was built and gated: "
                        + String.join("; ", problems));
            }
            return "every staged file, " + Checksums.FILE + " included, matches the SHA-256 recorded at staging and "
                    + "each image directory verifies";
        }

        String publish(StagedImages staged) {
            Path target = outDir.resolve(version);
            try {
                Files.move(staged.root(), target, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                throw new ReleaseException("cannot move " + staged.root() + " to " + target + ": " + e, e);
            }
            published = target;
            return "published " + target;
        }

        String mavenInstall() {
            checkRepository();
            Path dir = staging.resolve("maven");
            List<Artifact> all = MavenInstaller.signed(everything(), signer,
                    dir.resolve("signatures"));
            try {
                undo = MavenInstaller.Undo.record(mavenRepo, all, dir.resolve("previous"));
                installed = MavenInstaller.install(mavenRepo, all);
            } catch (IOException e) {
                throw new ReleaseException("cannot record the Maven repository before the install in " + dir + ": " + e,
                        e);
            }
            return "installed " + MavenInstaller.coordinates(all) + " into " + mavenRepo + ": "
                    + installed.files().stream().map(p -> p.getFileName().toString()).toList()
                    + (signer != null ? ", each artifact with its .asc signature by " + signer.fingerprint() : "");
        }

        /** What is installed and deployed: the image's artifacts, then the libraries'. */
        List<Artifact> everything() {
            Artifacts a = artifacts();
            List<Artifact> all = new ArrayList<>(
                    MavenInstaller.imageArtifacts(version, a.pom(), a.zips(), a.manifests()));
            all.addAll(libraries);
            return all;
        }

        String pins() {
            Map<Arch, ImageArtifacts.Pin> pins = new LinkedHashMap<>();
            try {
                for (Map.Entry<Arch, Path> z : artifacts().zips().entrySet()) {
                    pins.put(z.getKey(), new ImageArtifacts.Pin(Sha256.of(z.getValue()), Files.size(z.getValue())));
                }
                Files.writeString(published.resolve(ImageArtifacts.PINS_FILE),
                        ImageArtifacts.formatPins(version, pins, "qvm release " + version));
                return "wrote " + published.resolve(ImageArtifacts.PINS_FILE) + " (" + pins.entrySet().stream()
                        .map(e -> e.getKey().id() + " zip " + e.getValue().size() + " bytes sha256 " + e.getValue().sha256())
                        .toList() + "): copy it to qemu-backend/src/main/resources/" + ImageArtifacts.PINS_RESOURCE
                        + " before building the backend of " + version;
            } catch (IOException e) {
                throw new ReleaseException("cannot write the image pins into " + published + ": " + e, e);
            }
        }

        String deploy() {
            List<Artifact> all = everything();
            MavenDeployer.Deployed d = MavenDeployer.deploy(deploy, all, signer, staging.resolve("deploy"));
            return "deployed " + MavenInstaller.coordinates(all) + " to " + deploy
                    + ": " + d.files() + ", each with " + String.join(", ", MavenDeployer.CHECKSUMS) + " checksum files"
                    + (signer != null ? " and the artifacts with their .asc signatures by " + signer.fingerprint() : "");
        }

        /** The Maven artifacts (POM, per architecture zip and manifest), written and checked once. */
        Artifacts artifacts() {
            if (artifacts != null) {
                return artifacts;
            }
            Path dir = staging.resolve("maven");
            try {
                Files.createDirectories(dir);
                Path pom = dir.resolve(MavenInstaller.ARTIFACT + "-" + version + ".pom");
                MavenInstaller.writePom(version, pom);
                Map<Arch, Path> zips = new LinkedHashMap<>();
                Map<Arch, Path> manifests = new LinkedHashMap<>();
                List<String> problems = new ArrayList<>();
                for (Arch a : archs) {
                    Path zip = dir.resolve(MavenInstaller.ARTIFACT + "-" + version + "-" + a.id() + ".zip");
                    ImageZipWriter.write(published.resolve(a.id()), zip);
                    zips.put(a, zip);
                    // A copy: Resolver may hard-link what it installs, and the published file stays its own.
                    Path manifest = dir.resolve(MavenInstaller.ARTIFACT + "-" + version + "-" + a.id() + ".json");
                    Files.copy(published.resolve(a.id()).resolve(ImageDirectory.MANIFEST), manifest);
                    manifests.put(a, manifest);
                    problems.addAll(artifactProblems(a, zip, manifest));
                }
                if (!problems.isEmpty()) {
                    throw new ReleaseException("the Maven artifacts are not what was staged and gated: "
                            + String.join("; ", problems));
                }
                artifacts = new Artifacts(pom, zips, manifests);
                return artifacts;
            } catch (IOException e) {
                throw new ReleaseException("cannot prepare the Maven artifacts in " + dir + ": " + e, e);
            }
        }

        /** What differs between {@code a}'s zip and manifest copy and what was recorded at staging. */
        private List<String> artifactProblems(Arch a, Path zip, Path manifest) throws IOException {
            String prefix = a.id() + "/";
            Map<String, String> expected = new TreeMap<>();
            recorded.forEach((f, h) -> {
                if (f.startsWith(prefix)) {
                    expected.put(f.substring(prefix.length()), h);
                }
            });
            List<String> problems = new ArrayList<>();
            for (String p : Checksums.compare(expected, ImageZipWriter.sha256(zip))) {
                problems.add(zip.getFileName() + ": " + p);
            }
            String copy = Sha256.of(manifest);
            if (!copy.equals(expected.get(ImageDirectory.MANIFEST))) {
                problems.add(manifest.getFileName() + ": recorded sha256 " + expected.get(ImageDirectory.MANIFEST)
                        + ", the copy has " + copy);
            }
            return problems;
        }

        String report() {
            Result sofar = new Result(version, started, (System.nanoTime() - t0) / 1_000_000, true, steps,
                    Optional.ofNullable(gateResult), List.copyOf(summaries.values()), reproduce, outDir,
                    Optional.of(published), mavenRepo, installed != null ? installed.files() : List.of());
            try {
                ReleaseReport.write(sofar, host, published);
                Checksums.add(published, List.of(ReleaseReport.JSON_FILE, ReleaseReport.MD_FILE, ImageArtifacts.PINS_FILE));
                if (signer != null) {
                    signer.signSums(published);
                }
            } catch (IOException e) {
                throw new ReleaseException("cannot write the release report into " + published + ": " + e, e);
            }
            return "wrote " + ReleaseReport.JSON_FILE + " and " + ReleaseReport.MD_FILE + " in " + published
                    + (signer != null ? "; signed " + Checksums.FILE + " (" + ImageArtifacts.SIGNATURE_FILE + ") with "
                    + signer.fingerprint() : "");
        }

        /** After a failed step: nothing stays published, nothing stays installed. */
        void rollBack() {
            if (undo != null) {
                undo.restore().forEach(progress);
                progress.accept("put " + mavenRepo + " back as it was before the install");
                undo = null;
                installed = null;
            }
            if (published != null) {
                FileTrees.deleteQuietly(published);
                progress.accept("removed " + published + ": a failed release publishes nothing");
                published = null;
            }
        }

        // ---- helpers ----------------------------------------------------------------------------

        private String describeImage(Path dir) {
            ImageManifest m = readManifest(dir);
            StringBuilder sb = new StringBuilder(dir.toString()).append(": kernel ")
                    .append(m.kernelVersion().orElse("?"));
            for (ImageManifest.Output o : m.outputFiles()) {
                sb.append(", ").append(o.name()).append(' ').append(o.size()).append(" bytes sha256 ").append(o.sha256());
            }
            return sb.toString();
        }
    }

    /** A release's Maven artifacts in the staging directory: what is installed and what is deployed. */
    private record Artifacts(Path pom, Map<Arch, Path> zips, Map<Arch, Path> manifests) {
    }

    static ImageManifest readManifest(Path dir) {
        try {
            return ImageManifest.read(dir.resolve(ImageDirectory.MANIFEST));
        } catch (IOException e) {
            throw new ReleaseException("cannot read " + dir.resolve(ImageDirectory.MANIFEST) + ": " + e.getMessage(), e);
        }
    }

    private static String ecosystem(org.cyclonedx.model.Component c) {
        if (c.getProperties() == null) {
            return "";
        }
        return c.getProperties().stream().filter(p -> ImageSbom.ECOSYSTEM.equals(p.getName()))
                .map(org.cyclonedx.model.Property::getValue).findFirst().orElse("");
    }

    private static List<String> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isRegularFile).map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /**
     * What a failed step says: the exception's message (its type too, unless it is a
     * {@link ReleaseException}, whose message is the evidence), then each cause that adds
     * something ("caused by ..."), so that no failure is recorded as a bare step name or "null".
     */
    static String whatFailed(Throwable e) {
        StringBuilder sb = new StringBuilder();
        java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
            String m = t.getMessage();
            String own = t instanceof ReleaseException && m != null && !m.isBlank() ? m
                    : t.getClass().getName() + (m == null || m.isBlank() ? "" : ": " + m);
            if (t != e) {
                if (m != null && sb.indexOf(m) >= 0) {
                    continue;
                }
                sb.append("; caused by ");
            }
            sb.append(own);
        }
        return sb.toString();
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl) + " …";
    }

    /** Builder; defaults in one place. */
    public static final class Builder {
        private String version;
        private Path outDir = ImageInfo.repoRoot().resolve("out").resolve("release");
        private List<Arch> archs = ARCHS;
        private Path mavenRepo;
        private boolean reproduce = true;
        private boolean install = true;
        private ReleaseSigner signer;
        private MavenDeployer.Target deploy;
        private PackageLock lock;
        private Path workerJar = ImageInfo.repoRoot().resolve("renderer-worker/target/renderer-worker.jar");
        private Path reactor = defaultReactor();
        private ImageFactory images;
        private Path cache = PackageStore.defaultCache();
        private ReleaseGate gate;
        private Consumer<String> progress = line -> { };
        private String host = System.getProperty("os.name") + " " + System.getProperty("os.arch") + ", "
                + Runtime.getRuntime().availableProcessors() + " cores";

        private Builder() {
        }

        /**
         * The checkout a release takes the library artifacts from unless told: the one named by the
         * system property {@value Release#REACTOR_PROPERTY} ({@code QVM_JAVA_OPTS="-Dqvm.release.reactor=DIR"}
         * for {@code qvm release}), else the one it runs in, as for the worker jar.
         */
        public static Path defaultReactor() {
            String p = System.getProperty(REACTOR_PROPERTY);
            return p != null && !p.isBlank() ? Path.of(p).toAbsolutePath().normalize() : ImageInfo.repoRoot();
        }

        /** The release version (default: the project's, {@link #projectVersion()}). */
        public Builder version(String v) {
            if (!QvmLibrary.isUsableVersion(v)) {
                throw new IllegalArgumentException("a release version names a directory of a Maven repository: "
                        + "letters, digits, '.', '_', '+' and '-', at most 100, starting with a letter or digit, no "
                        + "'..'; got '" + v + "'");
            }
            this.version = v;
            return this;
        }

        /** Where {@code <version>/} is published (default {@code out/release} of the checkout). */
        public Builder outDir(Path v) {
            this.outDir = Objects.requireNonNull(v);
            return this;
        }

        /** The architectures to release (default both, {@link #ARCHS}). */
        public Builder archs(List<Arch> v) {
            if (v.isEmpty() || v.stream().distinct().count() != v.size()) {
                throw new IllegalArgumentException("architectures must be distinct and at least one: " + v);
            }
            this.archs = List.copyOf(v);
            return this;
        }

        /** The local Maven repository (default {@link MavenInstaller#localRepository(Path) as Maven finds it}). */
        public Builder mavenRepository(Path v) {
            this.mavenRepo = v;
            return this;
        }

        /**
         * Whether each image is built twice and compared (default true; false only for a quick try,
         * which must not install: {@link #install(boolean) install(false)}).
         */
        public Builder reproduce(boolean v) {
            this.reproduce = v;
            return this;
        }

        /**
         * Whether the published release is installed into the Maven repository (default true). A
         * release that skips the reproduce step must say {@code install(false)}: what the backend
         * finds in a Maven repository is only ever an image proven reproducible.
         */
        public Builder install(boolean v) {
            this.install = v;
            return this;
        }

        /**
         * Signs the release (default: unsigned): each image's {@code SHA256SUMS} and the release's
         * get a detached OpenPGP signature, {@code SHA256SUMS.asc} ({@link ReleaseSigner}).
         */
        public Builder signer(ReleaseSigner v) {
            this.signer = Objects.requireNonNull(v);
            return this;
        }

        /**
         * Deploys the release to a remote Maven repository as its last step (default: no deploy;
         * {@link MavenDeployer#target} makes the target from a URL, a repository id and settings.xml).
         */
        public Builder deploy(MavenDeployer.Target v) {
            this.deploy = Objects.requireNonNull(v);
            return this;
        }

        public Builder lock(PackageLock v) {
            this.lock = Objects.requireNonNull(v);
            return this;
        }

        public Builder workerJar(Path v) {
            this.workerJar = Objects.requireNonNull(v);
            return this;
        }

        /**
         * The checkout whose library artifacts the release installs and deploys with its images
         * ({@link LibraryArtifacts#fromReactor}; default {@link #defaultReactor()}).
         */
        public Builder reactor(Path v) {
            this.reactor = Objects.requireNonNull(v);
            return this;
        }

        /** The image build (default {@link BuilderImages} over the lock and worker jar). */
        public Builder images(ImageFactory v) {
            this.images = Objects.requireNonNull(v);
            return this;
        }

        /** The package cache of the first build (default {@code $QVM_CACHE} or {@code ~/.cache/qvm}). */
        public Builder cache(Path v) {
            this.cache = Objects.requireNonNull(v);
            return this;
        }

        /** The gate (required; the product's is {@link HostGate}). */
        public Builder gate(ReleaseGate v) {
            this.gate = Objects.requireNonNull(v);
            return this;
        }

        public Builder progress(Consumer<String> v) {
            this.progress = Objects.requireNonNull(v);
            return this;
        }

        /** How the report names this host (default: OS, CPU architecture, cores). */
        public Builder host(String v) {
            this.host = Objects.requireNonNull(v);
            return this;
        }

        /**
         * @throws IllegalStateException the release would install (or sign) images that were built
         *     only once: a release that skips the reproduce step installs nothing
         */
        public Release build() {
            if (!reproduce && install) {
                throw new IllegalStateException(SKIP_REPRODUCE_INSTALLS);
            }
            if (!reproduce && deploy != null) {
                throw new IllegalStateException("a release that skips the reproduce step is never deployed: what a "
                        + "repository serves is only ever an image proven reproducible. Drop --skip-reproduce, or "
                        + "--deploy-url for a quick try");
            }
            if (!reproduce && signer != null) {
                throw new IllegalStateException("a release that skips the reproduce step is never signed: a signature "
                        + "says the images are what the pinned inputs make, which one build does not show. Drop "
                        + "--skip-reproduce, or --signing-key for a quick try");
            }
            return new Release(this);
        }
    }
}
