package io.qvm.release;

import io.qvm.admin.ImageArtifacts;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.maven.model.Model;
import org.apache.maven.model.io.xpp3.MavenXpp3Writer;
import org.eclipse.aether.RepositorySystem;
import org.eclipse.aether.RepositorySystemSession;
import org.eclipse.aether.artifact.Artifact;
import org.eclipse.aether.artifact.DefaultArtifact;
import org.eclipse.aether.installation.InstallRequest;
import org.eclipse.aether.installation.InstallResult;
import org.eclipse.aether.installation.InstallationException;
import org.eclipse.aether.supplier.RepositorySystemSupplier;

/**
 * Installs a release's images into a local Maven repository the way Maven's own install does,
 * through Maven Resolver: {@link ImageArtifacts}'s {@code io.qvm:qvm-image:<version>}, a {@code pom}
 * (written with Maven's model writer) and per architecture a {@code zip} ({@link ImageZipWriter})
 * and a {@code json} (its {@code manifest.json}), each with classifier {@link Arch#qemuName()}:
 * <pre>
 * &lt;repo&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;.pom
 * &lt;repo&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;-x86_64.zip   qvm-image-&lt;v&gt;-x86_64.json
 * &lt;repo&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;-aarch64.zip  qvm-image-&lt;v&gt;-aarch64.json
 * </pre>
 * (plus Resolver's {@code maven-metadata-local.xml} and {@code _remote.repositories}). A release
 * installs the library artifacts of {@link LibraryArtifacts} in the same request
 * ({@link #install(Path, List)}), and with a signer each artifact's {@code .asc} ({@link #signed}). The
 * repository is the one the backend's image resolver looks in ({@link ImageArtifacts#localRepository()})
 * unless the caller names another, and the coordinates are the ones it looks for. An install is
 * taken back with the {@link Undo} recorded before it: the repository as it was, whether the
 * install failed partway or a later step of the release did.
 */
public final class MavenInstaller {

    public static final String GROUP = ImageArtifacts.GROUP_ID;
    public static final String ARTIFACT = ImageArtifacts.ARTIFACT_ID;

    /** The files an install wrote (the artifacts' paths in the repository). */
    public record Installed(Path repository, List<Path> files) {
        public Installed {
            files = List.copyOf(files);
        }
    }

    /** Resolver's record of what it installed, in the version directory and in the artifact's. */
    static final String METADATA = "maven-metadata-local.xml";
    static final String TRACKING = "_remote.repositories";

    private MavenInstaller() {
    }

    /**
     * The local repository: {@code option} if given, else where the backend looks
     * ({@link ImageArtifacts#localRepository()}: {@code -Dmaven.repo.local}, {@code $QVM_MAVEN_REPO},
     * {@code <localRepository>} of {@code ~/.m2/settings.xml}, {@code ~/.m2/repository}).
     */
    public static Path localRepository(Path option) {
        if (option != null) {
            return option.toAbsolutePath().normalize();
        }
        return ImageArtifacts.localRepository();
    }

    /** Where an artifact of this release lands in {@code repo} (classifier null for the POM). */
    public static Path path(Path repo, String version, String classifier, String extension) {
        return ImageArtifacts.artifactPath(repo, GROUP, ARTIFACT, version, classifier, extension);
    }

    /** {@code <repo>/io/qvm/qvm-image/<version>}. */
    public static Path versionDirectory(Path repo, String version) {
        return path(repo, version, null, "pom").getParent();
    }

    /** Whether {@code version} is a snapshot as Resolver sees it ({@code -SNAPSHOT}): one a release may replace. */
    public static boolean isSnapshot(String version) {
        return new DefaultArtifact(GROUP, ARTIFACT, "pom", version).isSnapshot();
    }

    /**
     * An artifact of {@code version} that {@code repo} holds already (a POM, zip or manifest of
     * {@code qvm-image-<version>}), if any: that version is installed there.
     */
    public static Optional<Path> installed(Path repo, String version) {
        Path dir = versionDirectory(repo, version);
        if (!Files.isDirectory(dir)) {
            return Optional.empty();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(ARTIFACT + "-" + version))
                    .filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)).sorted().findFirst();
        } catch (IOException e) {
            throw new ReleaseException("cannot list " + dir + ": " + e, e);
        }
    }

    /** Writes the release's POM ({@code pom} packaging, no dependencies) into {@code file}. */
    public static void writePom(String version, Path file) throws IOException {
        Model m = new Model();
        m.setModelVersion("4.0.0");
        m.setGroupId(GROUP);
        m.setArtifactId(ARTIFACT);
        m.setVersion(version);
        m.setPackaging("pom");
        m.setName("qvm guest images");
        m.setDescription("qvm's guest images, proven on a real host before publishing: per architecture a zip "
                + "(classifier x86_64, aarch64: vmlinuz, initramfs.cpio.lz4, manifest.json, SHA256SUMS, "
                + "sbom.cdx.json) and its manifest.json (same classifier, type json).");
        try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            new MavenXpp3Writer().write(w, m);
        }
    }

    /**
     * Installs the POM and, per architecture, the zip and the manifest.
     *
     * @param zips architecture → its image zip
     * @param manifests architecture → its manifest.json
     * @throws ReleaseException Resolver refused or failed the install
     */
    public static Installed install(Path repo, String version, Path pom, Map<Arch, Path> zips,
            Map<Arch, Path> manifests) {
        return install(repo, imageArtifacts(version, pom, zips, manifests));
    }

    /**
     * Installs {@code artifacts} (each with its file) in one Resolver request: the image's
     * ({@link #imageArtifacts}), the libraries' ({@link LibraryArtifacts}), their signatures
     * ({@link #signed}).
     *
     * @throws ReleaseException Resolver refused or failed the install
     */
    public static Installed install(Path repo, List<Artifact> artifacts) {
        InstallRequest request = new InstallRequest();
        artifacts.forEach(request::addArtifact);
        RepositorySystem system = new RepositorySystemSupplier().get();
        try (RepositorySystemSession.CloseableSession session = system.createSessionBuilder()
                .withLocalRepositoryBaseDirectories(repo).setSystemProperties(System.getProperties()).build()) {
            InstallResult result = system.install(session, request);
            List<Path> files = new ArrayList<>();
            for (Artifact a : result.getArtifacts()) {
                files.add(path(repo, a));
            }
            return new Installed(repo, files);
        } catch (InstallationException e) {
            throw new ReleaseException("Maven Resolver could not install " + coordinates(artifacts) + " into " + repo
                    + ": " + e.getMessage(), e);
        } finally {
            system.shutdown();
        }
    }

    /** The image's artifacts: the POM, then per architecture the zip and the manifest. */
    public static List<Artifact> imageArtifacts(String version, Path pom, Map<Arch, Path> zips,
            Map<Arch, Path> manifests) {
        List<Artifact> out = new ArrayList<>();
        out.add(artifact(null, "pom", version, pom));
        for (Map.Entry<Arch, Path> z : zips.entrySet()) {
            String classifier = z.getKey().qemuName();
            out.add(artifact(classifier, "zip", version, z.getValue()));
            Path manifest = manifests.get(z.getKey());
            if (manifest == null) {
                throw new IllegalArgumentException("no manifest for " + z.getKey());
            }
            out.add(artifact(classifier, "json", version, manifest));
        }
        return out;
    }

    /**
     * {@code artifacts}, each followed by its detached armoured OpenPGP signature by {@code signer}
     * (the same coordinates, extension {@code <ext>.asc}, as Maven Central has them), written into
     * {@code dir}; {@code artifacts} as they are when {@code signer} is null.
     */
    public static List<Artifact> signed(List<Artifact> artifacts, ReleaseSigner signer, Path dir) {
        if (signer == null) {
            return List.copyOf(artifacts);
        }
        List<Artifact> out = new ArrayList<>();
        try {
            Files.createDirectories(dir);
            for (Artifact a : artifacts) {
                out.add(a);
                Path asc = dir.resolve(a.getArtifactId() + "-" + a.getVersion()
                        + (a.getClassifier().isEmpty() ? "" : "-" + a.getClassifier()) + "." + a.getExtension() + ".asc");
                Files.writeString(asc, signer.sign(Files.readAllBytes(a.getPath())), StandardCharsets.US_ASCII);
                out.add(new DefaultArtifact(a.getGroupId(), a.getArtifactId(), a.getClassifier(),
                        a.getExtension() + ".asc", a.getVersion()).setPath(asc));
            }
        } catch (IOException e) {
            throw new ReleaseException("cannot sign the artifacts into " + dir + ": " + e, e);
        }
        return out;
    }

    /** Where {@code a} lands in {@code repo}. */
    public static Path path(Path repo, Artifact a) {
        return ImageArtifacts.artifactPath(repo, a.getGroupId(), a.getArtifactId(), a.getBaseVersion(),
                a.getClassifier().isEmpty() ? null : a.getClassifier(), a.getExtension());
    }

    /** {@code g:{a1,a2}:v} for a message. */
    static String coordinates(List<Artifact> artifacts) {
        if (artifacts.isEmpty()) {
            return "nothing";
        }
        Artifact first = artifacts.get(0);
        String ids = artifacts.stream().map(Artifact::getArtifactId).distinct().collect(Collectors.joining(","));
        return first.getGroupId() + ":" + (ids.contains(",") ? "{" + ids + "}" : ids) + ":" + first.getBaseVersion();
    }

    /**
     * A repository as it was before an install, to take the install back: every path the install
     * writes (the POM, per architecture the zip and the manifest, Resolver's
     * {@value #TRACKING} and both {@value #METADATA}) with a copy of each that was a file, and the
     * topmost directory (the version directory, or above it up to the repository) that did not
     * exist. {@link #restore} puts each copy back, deletes what was not there and that directory;
     * a path that held something else (a directory) is left as it is.
     */
    public static final class Undo {
        private final Map<Path, Path> copies;
        private final List<Path> absent;
        private final List<Path> created;

        private Undo(Map<Path, Path> copies, List<Path> absent, List<Path> created) {
            this.copies = copies;
            this.absent = absent;
            this.created = created;
        }

        /** Records what an install of {@code version} for {@code archs} would change, copies into {@code copiesDir}. */
        public static Undo record(Path repo, String version, List<Arch> archs, Path copiesDir) throws IOException {
            List<Artifact> image = new ArrayList<>(List.of(artifact(null, "pom", version, null)));
            for (Arch a : archs) {
                image.add(artifact(a.qemuName(), "zip", version, null));
                image.add(artifact(a.qemuName(), "json", version, null));
            }
            return record(repo, image, copiesDir);
        }

        /**
         * Records what an install of {@code artifacts} would change (each artifact's path, and in
         * each of their directories Resolver's records), copies into {@code copiesDir}.
         */
        public static Undo record(Path repo, List<Artifact> artifacts, Path copiesDir) throws IOException {
            Set<Path> targets = new LinkedHashSet<>();
            Set<Path> versionDirs = new LinkedHashSet<>();
            for (Artifact a : artifacts) {
                Path p = path(repo, a);
                targets.add(p);
                versionDirs.add(p.getParent());
            }
            for (Path dir : versionDirs) {
                targets.addAll(List.of(dir.resolve(TRACKING), dir.resolve(METADATA), dir.getParent().resolve(METADATA)));
            }
            Files.createDirectories(copiesDir);
            Map<Path, Path> copies = new LinkedHashMap<>();
            List<Path> absent = new ArrayList<>();
            for (Path t : targets) {
                if (Files.isRegularFile(t, LinkOption.NOFOLLOW_LINKS)) {
                    copies.put(t, Files.copy(t, copiesDir.resolve(Integer.toString(copies.size())),
                            StandardCopyOption.COPY_ATTRIBUTES));
                } else if (!Files.exists(t, LinkOption.NOFOLLOW_LINKS)) {
                    absent.add(t);
                }
            }
            Set<Path> created = new LinkedHashSet<>();
            for (Path dir : versionDirs) {
                Path top = null;
                for (Path d = dir; d.startsWith(repo) && !Files.exists(d, LinkOption.NOFOLLOW_LINKS); d = d.getParent()) {
                    top = d;
                }
                if (top != null) {
                    created.add(top);
                }
            }
            // the topmost only: a directory inside another one that was not there goes with it
            List<Path> topmost = created.stream().filter(c -> created.stream().noneMatch(o -> !o.equals(c)
                    && c.startsWith(o))).toList();
            return new Undo(copies, absent, topmost);
        }

        /** Puts the repository back as it was; what could not be, one sentence each (empty when all was). */
        public List<String> restore() {
            List<String> problems = new ArrayList<>();
            copies.forEach((target, copy) -> {
                try {
                    Files.copy(copy, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.COPY_ATTRIBUTES);
                } catch (IOException e) {
                    problems.add("could not put back " + target + ": " + e);
                }
            });
            List<Path> delete = new ArrayList<>(absent);
            delete.addAll(created);
            for (Path p : delete) {
                try {
                    FileTrees.delete(p);
                } catch (IOException e) {
                    problems.add("could not remove " + p + ": " + e);
                }
            }
            return problems;
        }
    }

    private static Artifact artifact(String classifier, String extension, String version, Path file) {
        return new DefaultArtifact(GROUP, ARTIFACT, classifier == null ? "" : classifier, extension, version)
                .setPath(file);
    }
}
