package io.qvm.image;

import io.qvm.protocol.image.Arch;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads and verifies a built image directory ({@code <out>/<arch>/}).
 *
 * @param dir       the image directory
 * @param manifest  its manifest.json
 * @param problems  empty when every file matches SHA256SUMS and the manifest
 */
public record ImageInfo(Path dir, JsonNode manifest, List<String> problems) {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    public boolean ok() {
        return problems.isEmpty();
    }

    /** The repository root: the nearest directory up from the working directory with initramfs-build/. */
    public static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        for (Path q = p; q != null; q = q.getParent()) {
            if (Files.isDirectory(q.resolve("initramfs-build")) && Files.isRegularFile(q.resolve("pom.xml"))) {
                return q;
            }
        }
        return p;
    }

    /** {@code $QVM_IMAGE_DIR}, else {@code out/image} under the repository root. */
    public static Path defaultOutDir() {
        String env = System.getenv("QVM_IMAGE_DIR");
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        return repoRoot().resolve("out/image");
    }

    /** Reads {@code <out>/<arch>/} and checks it against its SHA256SUMS and manifest. */
    public static ImageInfo read(Path outDir, Arch arch) {
        Path dir = outDir.resolve(arch.id());
        Path manifestFile = dir.resolve(ImageBuilder.MANIFEST);
        if (!Files.isRegularFile(manifestFile)) {
            throw new ImageException("no image for " + arch + " in " + dir + ": build it with "
                    + "./qvm image build --arch " + arch.id());
        }
        List<String> problems = new ArrayList<>();
        JsonNode manifest;
        try {
            manifest = MAPPER.readTree(manifestFile.toFile());
        } catch (IOException e) {
            throw new ImageException("cannot read " + manifestFile + ": " + e, e);
        }
        Map<String, String> sums = new LinkedHashMap<>();
        Path sumsFile = dir.resolve(ImageBuilder.SHA256SUMS);
        try {
            for (String line : Files.readAllLines(sumsFile)) {
                if (line.isBlank()) {
                    continue;
                }
                String[] f = line.split("\\s+\\*?", 2);
                sums.put(f[1].trim(), f[0]);
            }
        } catch (IOException e) {
            problems.add("cannot read " + sumsFile + ": " + e.getMessage());
        }
        for (String f : new String[] {ImageBuilder.VMLINUZ, ImageBuilder.INITRAMFS, ImageBuilder.MANIFEST}) {
            Path p = dir.resolve(f);
            if (!Files.isRegularFile(p)) {
                problems.add(f + " is missing");
                continue;
            }
            String actual = Sha256.of(p);
            if (!actual.equals(sums.get(f))) {
                problems.add(f + ": sha256 " + actual + " but SHA256SUMS says " + sums.get(f));
            }
        }
        for (JsonNode o : manifest.path("outputs")) {
            Path p = dir.resolve(o.path("name").asText());
            if (Files.isRegularFile(p) && !Sha256.of(p).equals(o.path("sha256").asText())) {
                problems.add(o.path("name").asText() + " does not match manifest.json");
            }
        }
        if (!manifest.path("arch").asText().equals(arch.id())) {
            problems.add("manifest.json says arch " + manifest.path("arch").asText() + ", expected " + arch);
        }
        return new ImageInfo(dir, manifest, List.copyOf(problems));
    }
}
