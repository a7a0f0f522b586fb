package io.qvm.release;

import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The reproducibility check of a release: two builds of one architecture, from the same lock,
 * into two fresh directories, compared byte for byte, every file. A difference names the file
 * and both SHA-256s; for {@code initramfs.cpio.lz4} also the first archive entry that differs
 * ({@link InitramfsReader#firstDifference}), which is where the cause is.
 */
public final class Reproducibility {

    /**
     * One file that is not the same in both builds.
     *
     * @param file the path relative to the build directory, with {@code /}
     * @param first the file's SHA-256 in the first build, or null when it has no such file
     * @param second the same for the second build
     * @param detail where inside the file it differs, when known (else empty)
     */
    public record Difference(String file, String first, String second, String detail) {
        /** One sentence: the file, both hashes, the detail. */
        public String describe() {
            return file + " differs: first build " + (first == null ? "has no such file" : "sha256 " + first)
                    + ", second build " + (second == null ? "has no such file" : "sha256 " + second)
                    + (detail.isEmpty() ? "" : "; " + detail);
        }
    }

    private Reproducibility() {
    }

    /** Every regular file under either directory that differs (missing on one side counts), sorted by path. */
    public static List<Difference> compare(Path first, Path second) {
        try {
            TreeSet<String> names = new TreeSet<>(files(first));
            names.addAll(files(second));
            List<Difference> out = new ArrayList<>();
            for (String name : names) {
                Path a = first.resolve(name);
                Path b = second.resolve(name);
                boolean hasA = Files.isRegularFile(a);
                boolean hasB = Files.isRegularFile(b);
                if (hasA && hasB && Files.mismatch(a, b) == -1) {
                    continue;
                }
                String detail = "";
                if (hasA && hasB && name.endsWith(ImageDirectory.INITRAMFS)) {
                    detail = inside(a, b);
                }
                out.add(new Difference(name, hasA ? Sha256.of(a) : null, hasB ? Sha256.of(b) : null, detail));
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot compare " + first + " with " + second + ": " + e.getMessage(), e);
        }
    }

    /** The differences, one per line, or a line saying both builds are the same. */
    public static String describe(List<Difference> differences, Path first) {
        if (differences.isEmpty()) {
            return "two builds are byte-identical (" + count(first) + " files)";
        }
        StringBuilder sb = new StringBuilder("two builds differ in " + differences.size() + " file"
                + (differences.size() == 1 ? "" : "s") + ":");
        differences.forEach(d -> sb.append("\n  ").append(d.describe()));
        return sb.toString();
    }

    private static String inside(Path a, Path b) {
        try {
            Optional<String> d = InitramfsReader.firstDifference(a, b);
            return d.orElse("every archive entry is the same, so the compression differs");
        } catch (IOException e) {
            return "its archives could not be compared: " + e.getMessage();
        }
    }

    private static int count(Path dir) {
        try {
            return files(dir).size();
        } catch (IOException e) {
            return 0;
        }
    }

    private static List<String> files(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).map(p -> dir.relativize(p).toString().replace('\\', '/'))
                    .sorted().toList();
        }
    }
}
