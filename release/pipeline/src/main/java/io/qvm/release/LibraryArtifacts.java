package io.qvm.release;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.maven.model.Dependency;
import org.apache.maven.model.Model;
import org.apache.maven.model.io.xpp3.MavenXpp3Reader;
import org.codehaus.plexus.util.xml.pull.XmlPullParserException;
import org.eclipse.aether.artifact.Artifact;
import org.eclipse.aether.artifact.DefaultArtifact;

/**
 * The library artifacts a release publishes beside its images (adr/0013), as {@code mvn verify}
 * left them in a checkout (the reactor):
 * <pre>
 * io.qvm:qvm-parent:pom           &lt;root&gt;/pom.xml            (the modules' POMs name it as parent)
 * io.qvm:qvm-bom:pom              &lt;root&gt;/release/bom/pom.xml
 * per jar the BOM manages, from the module that builds it:
 * io.qvm:&lt;a&gt;:pom                 &lt;module&gt;/pom.xml
 * io.qvm:&lt;a&gt;:jar                 &lt;module&gt;/target/&lt;a&gt;-&lt;v&gt;.jar
 * io.qvm:&lt;a&gt;:jar:sources         &lt;module&gt;/target/&lt;a&gt;-&lt;v&gt;-sources.jar
 * io.qvm:&lt;a&gt;:jar:javadoc         &lt;module&gt;/target/&lt;a&gt;-&lt;v&gt;-javadoc.jar
 * </pre>
 * The BOM is the one list of what is published: a jar it manages that no module of the root POM's
 * {@code <modules>} builds, a module at another version, or a jar that is not built is refused
 * with the command that builds it, all of them in one message.
 */
public final class LibraryArtifacts {

    public static final String GROUP = MavenInstaller.GROUP;
    public static final String PARENT = "qvm-parent";
    public static final String BOM = "qvm-bom";
    /** Where the BOM's POM is, under the root. */
    public static final String BOM_POM = "release/bom/pom.xml";

    private final Path root;
    private final String version;
    private final List<String> libraries;
    private final List<Artifact> artifacts;

    private LibraryArtifacts(Path root, String version, List<String> libraries, List<Artifact> artifacts) {
        this.root = root;
        this.version = version;
        this.libraries = List.copyOf(libraries);
        this.artifacts = List.copyOf(artifacts);
    }

    /**
     * Finds the library artifacts of {@code version} in the checkout at {@code root}.
     *
     * @throws ReleaseException a POM is missing or unreadable, the BOM names a jar no module builds,
     *     or a module is at another version or its jars are not built
     */
    public static LibraryArtifacts fromReactor(Path root, String version) {
        Path parentPom = root.resolve("pom.xml");
        Path bomPom = root.resolve(BOM_POM);
        Model parent = read(parentPom);
        Model bom = read(bomPom);
        List<String> problems = new ArrayList<>();
        expect(parent, PARENT, parentPom, version, problems);
        expect(bom, BOM, bomPom, version, problems);
        Map<String, Path> modules = new LinkedHashMap<>();
        for (String m : parent.getModules()) {
            Path pom = root.resolve(m).resolve("pom.xml");
            modules.put(read(pom).getArtifactId(), pom);
        }
        List<String> libraries = new ArrayList<>();
        List<Artifact> artifacts = new ArrayList<>();
        artifacts.add(artifact(PARENT, "", "pom", version, parentPom));
        artifacts.add(artifact(BOM, "", "pom", version, bomPom));
        List<Dependency> managed = bom.getDependencyManagement() == null ? List.of()
                : bom.getDependencyManagement().getDependencies();
        for (Dependency d : managed) {
            if (!GROUP.equals(d.getGroupId()) || !"jar".equals(d.getType()) || d.getClassifier() != null) {
                continue; // the image's zips and manifests come from the release itself
            }
            String a = d.getArtifactId();
            Path pom = modules.get(a);
            if (pom == null) {
                problems.add(bomPom + " manages " + GROUP + ":" + a + " but no module of " + parentPom
                        + " builds it: add the module to <modules>, or take it out of the BOM");
                continue;
            }
            expect(read(pom), a, pom, version, problems);
            Path target = pom.getParent().resolve("target");
            artifacts.add(artifact(a, "", "pom", version, pom));
            for (String classifier : List.of("", "sources", "javadoc")) {
                Path jar = target.resolve(a + "-" + version + (classifier.isEmpty() ? "" : "-" + classifier) + ".jar");
                if (!Files.isRegularFile(jar)) {
                    problems.add("no " + jar);
                }
                artifacts.add(artifact(a, classifier, "jar", version, jar));
            }
            libraries.add(a);
        }
        if (!problems.isEmpty()) {
            throw new ReleaseException("the library artifacts of " + version + " in " + root + " are not ready to "
                    + "publish: " + String.join("; ", problems) + ". Build them at the release's version: mvn "
                    + "versions:set -DnewVersion=" + version + " -DprocessAllModules (when the project is at another "
                    + "version), then mvn -DskipTests verify");
        }
        return new LibraryArtifacts(root, version, libraries, artifacts);
    }

    /** The checkout they were found in. */
    public Path root() {
        return root;
    }

    public String version() {
        return version;
    }

    /** The artifactIds of the library jars, in the BOM's order. */
    public List<String> libraries() {
        return libraries;
    }

    /** Every artifact with its file: the parent's and the BOM's POM, then per library its POM and three jars. */
    public List<Artifact> artifacts() {
        return artifacts;
    }

    @Override
    public String toString() {
        return GROUP + ":{" + PARENT + "," + BOM + "," + String.join(",", libraries) + "}:" + version + " from " + root;
    }

    private static void expect(Model m, String artifactId, Path pom, String version, List<String> problems) {
        String group = m.getGroupId() != null ? m.getGroupId() : m.getParent() != null ? m.getParent().getGroupId() : null;
        String v = m.getVersion() != null ? m.getVersion() : m.getParent() != null ? m.getParent().getVersion() : null;
        if (!GROUP.equals(group) || !artifactId.equals(m.getArtifactId())) {
            problems.add(pom + " is " + group + ":" + m.getArtifactId() + ", not " + GROUP + ":" + artifactId);
        } else if (!version.equals(v)) {
            problems.add(pom + " is at version " + v + ", not " + version);
        }
    }

    private static Model read(Path pom) {
        try (Reader r = Files.newBufferedReader(pom)) {
            return new MavenXpp3Reader().read(r);
        } catch (IOException | XmlPullParserException e) {
            throw new ReleaseException("cannot read " + pom + " (the library artifacts are published from the "
                    + "checkout the release runs in): " + e.getMessage(), e);
        }
    }

    private static Artifact artifact(String artifactId, String classifier, String extension, String version, Path file) {
        return new DefaultArtifact(GROUP, artifactId, classifier, extension, version).setPath(file);
    }
}
