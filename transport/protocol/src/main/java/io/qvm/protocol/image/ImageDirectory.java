package io.qvm.protocol.image;

import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A built image directory, {@code <root>/<arch>/}, holding exactly {@value #KERNEL},
 * {@value #INITRAMFS}, {@value #MANIFEST} and {@value #SHA256SUMS} (sha256sum format, covering
 * the other three; docs/CONTRACTS.md), and its one verifier: the backend refuses to boot an image
 * that {@link #verify} finds a problem with, the image tools report the problems.
 */
public final class ImageDirectory {

    public static final String KERNEL = "vmlinuz";
    public static final String INITRAMFS = "initramfs.cpio.lz4";
    public static final String MANIFEST = "manifest.json";
    public static final String SHA256SUMS = "SHA256SUMS";
    /** Where the worker's root file system lies in the initramfs (the OCI bundle's {@code rootfs}). */
    public static final String BUNDLE_ROOTFS = "bundle/rootfs";
    /**
     * The worker's class archive as its JVM sees it ({@code -XX:SharedArchiveFile}). No image holds
     * one: a host adds it to the initramfs once a boot of the image made it (adr/0018).
     */
    public static final String CLASS_ARCHIVE = "/opt/qvm/worker.jsa";
    /** The same file as a path in the initramfs. */
    public static final String CLASS_ARCHIVE_IN_INITRAMFS = BUNDLE_ROOTFS + CLASS_ARCHIVE;
    /**
     * The initramfs of an image built by a qvm before 2026-12-07 (gzip; adr/0002), which this qvm
     * cannot boot: {@link #verify} names it as such rather than only as a missing file.
     */
    public static final String OLD_GZIP_INITRAMFS = "initramfs.cpio.gz";
    /** The files {@value #SHA256SUMS} must list. */
    public static final List<String> FILES = List.of(KERNEL, INITRAMFS, MANIFEST);

    private ImageDirectory() {
    }

    /**
     * What {@link #verify} found.
     *
     * @param dir the image directory
     * @param manifest the parsed manifest, unless it is missing or not valid JSON
     * @param sha256 file name → SHA-256 as listed in {@value #SHA256SUMS}
     * @param problems empty when every listed file exists inside the directory and matches its
     *     hash, the three files are listed, the manifest parses, names {@code arch} (or no arch)
     *     and its {@code outputs} match the files; else one sentence per problem, in that order,
     *     led by one that says so when the directory is an earlier qvm's image ({@value
     *     #OLD_GZIP_INITRAMFS} where {@value #INITRAMFS} should be)
     */
    public record Verified(Path dir, Optional<ImageManifest> manifest, Map<String, String> sha256,
            List<String> problems) {
        public Verified {
            sha256 = Map.copyOf(sha256);
            problems = List.copyOf(problems);
        }

        public boolean ok() {
            return problems.isEmpty();
        }
    }

    /** Checks {@code dir} (an image for {@code arch}) against its {@value #SHA256SUMS} and manifest. */
    public static Verified verify(Path dir, Arch arch) {
        List<String> problems = new ArrayList<>();
        Map<String, String> sums = sums(dir, problems);
        if (problems.isEmpty()) {
            for (String f : FILES) {
                if (!sums.containsKey(f)) {
                    problems.add(SHA256SUMS + " at " + dir + " does not list " + f);
                }
            }
        }
        Map<String, String> actual = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : sums.entrySet()) {
            Path file = dir.resolve(e.getKey()).normalize();
            if (file.getParent() == null || !file.getParent().equals(dir.normalize())) {
                problems.add(SHA256SUMS + " at " + dir + " names a file outside the image: " + e.getKey());
                continue;
            }
            hash(file, actual, problems).filter(h -> !h.equals(e.getValue())).ifPresent(h -> problems.add(
                    "checksum mismatch for " + file + ": " + SHA256SUMS + " says " + e.getValue() + ", the file has "
                    + h + ". The image is damaged or was modified"));
        }
        Optional<ImageManifest> manifest = Optional.empty();
        Path manifestFile = dir.resolve(MANIFEST);
        if (Files.isRegularFile(manifestFile)) {
            try {
                manifest = Optional.of(ImageManifest.read(manifestFile));
            } catch (IOException e) {
                problems.add(MANIFEST + " at " + dir + " is not valid JSON: " + e.getMessage());
            }
        }
        manifest.ifPresent(m -> {
            if (m.arch() != null && !m.arch().equals(arch.id())) {
                problems.add("the image at " + dir + " is for " + m.arch() + ", not " + arch.id());
            }
            for (ImageManifest.Output o : m.outputFiles()) {
                Path p = dir.resolve(o.name()).normalize();
                if (p.getParent() != null && p.getParent().equals(dir.normalize()) && Files.isRegularFile(p)) {
                    hash(p, actual, problems).filter(h -> !h.equals(o.sha256()))
                            .ifPresent(h -> problems.add(o.name() + " does not match " + MANIFEST));
                }
            }
        });
        if (!problems.isEmpty() && Files.isRegularFile(dir.resolve(OLD_GZIP_INITRAMFS))
                && !Files.exists(dir.resolve(INITRAMFS))) {
            problems.add(0, "the guest image at " + dir + " was built by an earlier qvm: its initramfs is "
                    + OLD_GZIP_INITRAMFS + " (gzip), and this qvm boots " + INITRAMFS + " (LZ4, since 2026-12-07)");
        }
        return new Verified(dir, manifest, sums, problems);
    }

    /** The files {@value #SHA256SUMS} lists, with their hashes; a problem for a missing file or bad line. */
    private static Map<String, String> sums(Path dir, List<String> problems) {
        Map<String, String> out = new LinkedHashMap<>();
        Path sums = dir.resolve(SHA256SUMS);
        if (!Files.isRegularFile(sums)) {
            problems.add("the guest image at " + dir + " has no " + SHA256SUMS);
            return out;
        }
        List<String> lines;
        try {
            lines = Files.readAllLines(sums);
        } catch (IOException e) {
            problems.add("cannot read " + sums + ": " + e.getMessage());
            return out;
        }
        for (String line : lines) {
            if (line.isBlank()) {
                continue;
            }
            // sha256sum format: 64 hex digits, two characters (" " or " *"), the file name
            if (line.length() < 67 || !line.substring(0, 64).matches("[0-9a-f]{64}")) {
                problems.add(sums + " has a malformed line: " + line);
                continue;
            }
            out.put(line.substring(66).trim(), line.substring(0, 64));
        }
        return out;
    }

    /** The file's hash (computed once per verification), or a problem when it is missing or unreadable. */
    private static Optional<String> hash(Path file, Map<String, String> known, List<String> problems) {
        String name = file.getFileName().toString();
        if (known.containsKey(name)) {
            return Optional.of(known.get(name));
        }
        if (!Files.isRegularFile(file)) {
            problems.add("the guest image at " + file.getParent() + " is missing " + name);
            return Optional.empty();
        }
        try {
            String h = Sha256.of(file);
            known.put(name, h);
            return Optional.of(h);
        } catch (IOException e) {
            problems.add("cannot read " + file + ": " + e.getMessage());
            return Optional.empty();
        }
    }
}
