package io.qvm.release;

import io.qvm.backend.image.ImageArtifact;
import io.qvm.backend.image.LocalMavenRepository;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * through Maven Resolver: {@link ImageArtifact}'s {@code io.qvm:qvm-image:<version>}, a {@code pom}
 * (written with Maven's model writer) and per architecture a {@code zip} ({@link ImageZipWriter})
 * and a {@code json} (its {@code manifest.json}), each with classifier {@link Arch#qemuName()}:
 * <pre>
 * &lt;repo&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;.pom
 * &lt;repo&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;-x86_64.zip   qvm-image-&lt;v&gt;-x86_64.json
 * &lt;repo&gt;/io/qvm/qvm-image/&lt;v&gt;/qvm-image-&lt;v&gt;-aarch64.zip  qvm-image-&lt;v&gt;-aarch64.json
 * </pre>
 * (plus Resolver's {@code maven-metadata-local.xml} and {@code _remote.repositories}). The
 * repository is the one the backend's image resolver looks in ({@link LocalMavenRepository})
 * unless the caller names another, and the coordinates are the ones it looks for.
 */
public final class MavenInstaller {

    public static final String GROUP = ImageArtifact.GROUP_ID;
    public static final String ARTIFACT = ImageArtifact.ARTIFACT_ID;

    /** The files an install wrote (the artifacts' paths in the repository). */
    public record Installed(Path repository, List<Path> files) {
        public Installed {
            files = List.copyOf(files);
        }
    }

    private MavenInstaller() {
    }

    /**
     * The local repository: {@code option} if given, else where the backend looks
     * ({@link LocalMavenRepository#system()}: {@code -Dmaven.repo.local}, {@code $QVM_MAVEN_REPO},
     * {@code <localRepository>} of {@code ~/.m2/settings.xml}, {@code ~/.m2/repository}).
     */
    public static Path localRepository(Path option) {
        if (option != null) {
            return option.toAbsolutePath().normalize();
        }
        return LocalMavenRepository.system().root();
    }

    /** Where an artifact of this release lands in {@code repo} (classifier null for the POM). */
    public static Path path(Path repo, String version, String classifier, String extension) {
        return new LocalMavenRepository(repo, "the release's").artifact(GROUP, ARTIFACT, version, classifier, extension);
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
                + "(classifier x86_64, aarch64: vmlinuz, initramfs.cpio.gz, manifest.json, SHA256SUMS, "
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
        InstallRequest request = new InstallRequest();
        request.addArtifact(artifact(null, "pom", version, pom));
        for (Map.Entry<Arch, Path> z : zips.entrySet()) {
            String classifier = z.getKey().qemuName();
            request.addArtifact(artifact(classifier, "zip", version, z.getValue()));
            Path manifest = manifests.get(z.getKey());
            if (manifest == null) {
                throw new IllegalArgumentException("no manifest for " + z.getKey());
            }
            request.addArtifact(artifact(classifier, "json", version, manifest));
        }
        RepositorySystem system = new RepositorySystemSupplier().get();
        try (RepositorySystemSession.CloseableSession session = system.createSessionBuilder()
                .withLocalRepositoryBaseDirectories(repo).setSystemProperties(System.getProperties()).build()) {
            InstallResult result = system.install(session, request);
            List<Path> files = new ArrayList<>();
            for (Artifact a : result.getArtifacts()) {
                files.add(path(repo, version, a.getClassifier().isEmpty() ? null : a.getClassifier(),
                        a.getExtension()));
            }
            return new Installed(repo, files);
        } catch (InstallationException e) {
            throw new ReleaseException("Maven Resolver could not install " + GROUP + ":" + ARTIFACT + ":" + version
                    + " into " + repo + ": " + e.getMessage(), e);
        } finally {
            system.shutdown();
        }
    }

    private static Artifact artifact(String classifier, String extension, String version, Path file) {
        return new DefaultArtifact(GROUP, ARTIFACT, classifier == null ? "" : classifier, extension, version)
                .setPath(file);
    }
}
