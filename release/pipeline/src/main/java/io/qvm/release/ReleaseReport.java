package io.qvm.release;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * {@code release.json} (schema {@value #SCHEMA}) and {@code release.md} of a {@link Release.Result}:
 * the version, the host, every step with its evidence (the gate's included), per architecture
 * the accelerator, the boot phases and READY time, the staged files' sizes and hashes and the
 * SBOM's counts, and where it was published and installed. A failed release has the same report,
 * printed by {@code qvm release} instead of written (nothing is published).
 */
public final class ReleaseReport {

    public static final String SCHEMA = "qvm.release/1";
    public static final String JSON_FILE = "release.json";
    public static final String MD_FILE = "release.md";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private ReleaseReport() {
    }

    public static ObjectNode json(Release.Result r, String host) {
        ObjectNode root = JSON.createObjectNode();
        root.put("schema", SCHEMA);
        root.put("version", r.version());
        root.put("ok", r.ok());
        root.put("started", r.started().toString());
        root.put("seconds", r.millis() / 1000.0);
        root.put("host", host);
        root.put("gate", r.gate().map(GateResult::gate).orElse(null));
        Optional<ReleaseStep> failed = r.failure();
        if (failed.isPresent()) {
            ObjectNode f = root.putObject("failedStep");
            f.put("name", failed.get().name());
            f.put("evidence", failed.get().evidence());
        } else {
            root.putNull("failedStep");
        }
        root.put("reproduced", r.reproduced());
        root.put("outDir", r.outDir().toString());
        root.put("published", r.published().map(Path::toString).orElse(null));
        root.put("mavenRepository", r.mavenRepository().toString());
        ArrayNode mf = root.putArray("mavenFiles");
        r.mavenFiles().forEach(p -> mf.add(p.toString()));
        ArrayNode steps = root.putArray("steps");
        for (ReleaseStep s : r.steps()) {
            ObjectNode n = steps.addObject();
            n.put("name", s.name());
            n.put("ok", s.ok());
            n.put("millis", s.millis());
            n.put("evidence", s.evidence());
        }
        ArrayNode archs = root.putArray("architectures");
        for (Release.ArchSummary a : r.archs()) {
            ObjectNode n = archs.addObject();
            n.put("arch", a.arch().id());
            Optional<GateResult.Boot> boot = r.gate().flatMap(g -> g.boot(a.arch()));
            n.put("accelerator", boot.map(GateResult.Boot::accelerator).orElse(null));
            n.put("machine", boot.map(GateResult.Boot::machine).orElse(null));
            if (boot.isPresent()) {
                n.put("readyMillis", boot.get().readyMillis());
            } else {
                n.putNull("readyMillis");
            }
            ArrayNode phases = n.putArray("bootPhases");
            boot.ifPresent(b -> b.phases().forEach(p -> phases.addObject().put("name", p.name()).put("millis", p.millis())));
            ArrayNode files = n.putArray("files");
            for (Map.Entry<String, Long> f : a.sizes().entrySet()) {
                files.addObject().put("name", f.getKey()).put("size", f.getValue()).put("sha256", a.sha256().get(f.getKey()));
            }
            ObjectNode sbom = n.putObject("sbom");
            sbom.put("file", ImageSbom.FILE);
            sbom.put("debianPackages", a.debianPackages());
            sbom.put("licensedPackages", a.licensedPackages());
            sbom.put("mavenArtifacts", a.mavenArtifacts());
            sbom.put("components", a.debianPackages() + a.mavenArtifacts());
        }
        return root;
    }

    public static String markdown(Release.Result r, String host) {
        StringBuilder md = new StringBuilder("# qvm release ").append(r.version()).append("\n\n");
        md.append(r.ok() ? "**Published**" : "**NOT published**").append(": ");
        if (r.ok()) {
            md.append("`").append(r.published().map(Path::toString).orElse("?")).append("`");
            if (r.steps().stream().anyMatch(s -> s.name().equals("maven-install"))) {
                md.append(", and installed into `").append(r.mavenRepository()).append("` as `")
                        .append(MavenInstaller.GROUP).append(':').append(MavenInstaller.ARTIFACT).append(':')
                        .append(r.version()).append("` with the library artifacts (").append(r.mavenFiles().size())
                        .append(" files in all, `mavenFiles` of release.json).\n\n");
            } else {
                md.append("; NOT installed into a Maven repository.\n\n");
            }
        } else {
            ReleaseStep f = r.failure().orElseThrow();
            md.append("step `").append(f.name()).append("` failed; nothing was published or installed.\n\n")
                    .append("```\n").append(f.evidence()).append("\n```\n\n");
        }
        md.append("Host: ").append(host).append(". Started ").append(r.started()).append(", took ")
                .append(String.format(Locale.ROOT, "%.0f", r.millis() / 1000.0)).append(" s. Gate: ")
                .append(r.gate().map(GateResult::gate).orElse("did not run")).append(". Reproducibility: ")
                .append(r.reproduced() ? "each image built twice and compared" : "NOT checked (--skip-reproduce)")
                .append(".\n\n");

        for (Release.ArchSummary a : r.archs()) {
            md.append("## ").append(a.arch().id()).append("\n\n");
            Optional<GateResult.Boot> boot = r.gate().flatMap(g -> g.boot(a.arch()));
            if (boot.isPresent()) {
                GateResult.Boot b = boot.get();
                md.append("Accelerator ").append(b.accelerator()).append(", machine ").append(b.machine())
                        .append(", READY after ").append(b.readyMillis()).append(" ms.\n\n");
                md.append("| boot phase | ms |\n| --- | ---: |\n");
                b.phases().forEach(p -> md.append("| ").append(p.name()).append(" | ").append(p.millis()).append(" |\n"));
                md.append('\n');
            } else {
                md.append("Not booted.\n\n");
            }
            md.append("| file | bytes | sha256 |\n| --- | ---: | --- |\n");
            a.sizes().forEach((f, size) -> md.append("| ").append(f).append(" | ").append(size).append(" | `")
                    .append(a.sha256().get(f)).append("` |\n"));
            md.append("\nSBOM (`").append(ImageSbom.FILE).append("`): ").append(a.debianPackages())
                    .append(" Debian packages (").append(a.licensedPackages()).append(" name their licences), ")
                    .append(a.mavenArtifacts()).append(" Maven artifacts.\n\n");
        }

        md.append("## Steps\n\n| step | ok | seconds | evidence |\n| --- | --- | ---: | --- |\n");
        for (ReleaseStep s : r.steps()) {
            md.append("| ").append(s.name()).append(" | ").append(s.ok() ? "yes" : "**NO**").append(" | ")
                    .append(String.format(Locale.ROOT, "%.1f", s.millis() / 1000.0)).append(" | ")
                    .append(cell(s.evidence())).append(" |\n");
        }
        return md.toString();
    }

    /** Writes both files into {@code dir}. */
    public static void write(Release.Result r, String host, Path dir) throws IOException {
        Files.writeString(dir.resolve(JSON_FILE), JSON.writeValueAsString(json(r, host)) + "\n");
        Files.writeString(dir.resolve(MD_FILE), markdown(r, host));
    }

    private static String cell(String text) {
        return text.replace("|", "\\|").replace("\r", "").replace("\n", "<br>");
    }
}
