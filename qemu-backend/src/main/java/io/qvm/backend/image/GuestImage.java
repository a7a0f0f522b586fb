package io.qvm.backend.image;

import io.qvm.HostSetupException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.qvm.backend.internal.Sha256;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A built guest image as the backend uses it: one directory per architecture holding
 * {@code vmlinuz}, {@code initramfs.cpio.gz}, {@code manifest.json} and {@code SHA256SUMS}
 * (docs/CONTRACTS.md). {@link #load} refuses an image that is incomplete or whose files do not
 * match {@code SHA256SUMS}, so a truncated or tampered initramfs never boots.
 *
 * @param arch the guest architecture
 * @param dir the image directory
 * @param manifest the parsed {@code manifest.json}
 * @param sha256 file name → SHA-256 as verified
 */
public record GuestImage(Arch arch, Path dir, JsonNode manifest, Map<String, String> sha256) {

    public static final String KERNEL = "vmlinuz";
    public static final String INITRD = "initramfs.cpio.gz";
    public static final String MANIFEST = "manifest.json";
    public static final String SUMS = "SHA256SUMS";
    /** Environment variable overriding the image root (the directory holding one subdirectory per arch). */
    public static final String ENV_IMAGE_DIR = "QVM_IMAGE_DIR";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> REQUIRED = Set.of(KERNEL, INITRD, MANIFEST);

    public GuestImage {
        sha256 = Map.copyOf(sha256);
    }

    public Path kernel() {
        return dir.resolve(KERNEL);
    }

    public Path initrd() {
        return dir.resolve(INITRD);
    }

    /** The kernel version the manifest names, if any. */
    public Optional<String> kernelVersion() {
        return Optional.ofNullable(manifest.path("kernel").path("version").textValue());
    }

    /** The transports the image's init supports (manifest {@code transports}); serial if not listed. */
    public List<String> transports() {
        List<String> out = new ArrayList<>();
        manifest.path("transports").forEach(t -> out.add(t.asText()));
        return out.isEmpty() ? List.of("serial") : out;
    }

    /**
     * The default image root: {@code $QVM_IMAGE_DIR}, else {@code out/image} under the qvm
     * checkout (found by walking up from the working directory to the directory holding
     * {@code qvm} and {@code pom.xml}), else {@code out/image} relative to the working directory.
     */
    public static Path defaultRoot() {
        String env = System.getenv(ENV_IMAGE_DIR);
        if (env != null && !env.isBlank()) {
            return Path.of(env);
        }
        Path p = Path.of("").toAbsolutePath();
        for (Path d = p; d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("qvm")) && Files.isRegularFile(d.resolve("pom.xml"))) {
                return d.resolve("out").resolve("image");
            }
        }
        return p.resolve("out").resolve("image");
    }

    /**
     * Loads and verifies the image for {@code arch} under {@code root}.
     *
     * @throws HostSetupException naming the missing file or the mismatching hash, and how to rebuild
     */
    public static GuestImage load(Path root, Arch arch) {
        Path dir = root.resolve(arch.qemuName());
        String rebuild = " Build it with: ./qvm image build --arch " + arch.qemuName()
                + (root.equals(defaultRoot()) ? "" : " --out " + root);
        if (!Files.isDirectory(dir)) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "no guest image for " + arch.qemuName() + " at " + dir + "." + rebuild);
        }
        Path sums = dir.resolve(SUMS);
        if (!Files.isRegularFile(sums)) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "the guest image at " + dir + " has no " + SUMS + "." + rebuild);
        }
        Map<String, String> expected = parseSums(sums, rebuild);
        for (String f : REQUIRED) {
            if (!expected.containsKey(f)) {
                throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, SUMS + " at " + dir + " does not list " + f + "." + rebuild);
            }
        }
        for (Map.Entry<String, String> e : expected.entrySet()) {
            Path file = dir.resolve(e.getKey()).normalize();
            if (!file.getParent().equals(dir.normalize())) {
                throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, SUMS + " at " + dir + " names a file outside the image: " + e.getKey());
            }
            if (!Files.isRegularFile(file)) {
                throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "the guest image at " + dir + " is missing " + e.getKey() + "." + rebuild);
            }
            String actual = sha256(file);
            if (!actual.equals(e.getValue())) {
                throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "checksum mismatch for " + file + ": SHA256SUMS says " + e.getValue()
                        + ", the file has " + actual + ". The image is damaged or was modified." + rebuild);
            }
        }
        JsonNode manifest;
        try {
            manifest = JSON.readTree(dir.resolve(MANIFEST).toFile());
        } catch (IOException ex) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "manifest.json at " + dir + " is not valid JSON." + rebuild, ex);
        }
        String manifestArch = manifest.path("arch").asText(arch.qemuName());
        if (!manifestArch.equals(arch.qemuName())) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "the image at " + dir + " is for " + manifestArch + ", not " + arch.qemuName()
                    + "." + rebuild);
        }
        return new GuestImage(arch, dir, manifest, expected);
    }

    private static Map<String, String> parseSums(Path sums, String rebuild) {
        Map<String, String> out = new LinkedHashMap<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(sums);
        } catch (IOException e) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "cannot read " + sums + ": " + e.getMessage(), e);
        }
        for (String line : lines) {
            if (line.isBlank()) {
                continue;
            }
            // sha256sum format: 64 hex digits, two characters (" " or " *"), the file name
            if (line.length() < 67 || !line.substring(0, 64).matches("[0-9a-f]{64}")) {
                throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, sums + " has a malformed line: " + line + "." + rebuild);
            }
            out.put(line.substring(66).trim(), line.substring(0, 64));
        }
        return out;
    }

    static String sha256(Path file) {
        try {
            return Sha256.of(file);
        } catch (IOException e) {
            throw new HostSetupException(HostSetupException.Problem.IMAGE_INVALID, "cannot read " + file + ": " + e.getMessage(), e);
        }
    }
}
