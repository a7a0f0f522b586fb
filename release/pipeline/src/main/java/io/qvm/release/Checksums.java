package io.qvm.release;

import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A release's checksum file, {@code <version>/SHA256SUMS}: one line per published file in
 * sha256sum format ({@code <64 hex>  <path>}), paths relative to the release directory with
 * {@code /}, sorted; {@code sha256sum -c SHA256SUMS} checks a release by hand.
 * {@link #verify(Path, Map)} is what the release runs before it publishes: every file re-hashed
 * against the sums {@link #write} returned at staging (not against the files, which whoever changes
 * one could rewrite too), no file missing and none unrecorded.
 */
public final class Checksums {

    public static final String FILE = "SHA256SUMS";

    private static final String RECORDED = "the sums recorded at staging";

    private Checksums() {
    }

    /** Hashes every regular file under {@code dir} except the checksum file itself and writes it. */
    public static Map<String, String> write(Path dir) throws IOException {
        Map<String, String> sums = new TreeMap<>();
        for (String f : files(dir)) {
            if (!f.equals(FILE)) {
                sums.put(f, Sha256.of(dir.resolve(f)));
            }
        }
        store(dir, sums);
        return sums;
    }

    /**
     * Adds {@code files} (paths relative to {@code dir}) to its checksum file, keeping every
     * recorded line as it is (the files already listed are not re-hashed).
     */
    public static void add(Path dir, List<String> files) throws IOException {
        Map<String, String> sums = read(dir);
        for (String f : files) {
            sums.put(f, Sha256.of(dir.resolve(f)));
        }
        store(dir, sums);
    }

    private static void store(Path dir, Map<String, String> sums) throws IOException {
        StringBuilder sb = new StringBuilder();
        new TreeMap<>(sums).forEach((f, h) -> sb.append(h).append("  ").append(f).append('\n'));
        Files.writeString(dir.resolve(FILE), sb.toString(), StandardCharsets.UTF_8);
    }

    /** The recorded path → SHA-256 of {@code dir/SHA256SUMS}. */
    public static Map<String, String> read(Path dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        for (String line : Files.readAllLines(dir.resolve(FILE), StandardCharsets.UTF_8)) {
            if (line.isBlank()) {
                continue;
            }
            if (line.length() < 67 || !line.substring(0, 64).matches("[0-9a-f]{64}")
                    || !line.startsWith("  ", 64)) {
                throw new IOException(dir.resolve(FILE) + " has a malformed line: " + line);
            }
            out.put(line.substring(66), line.substring(0, 64));
        }
        return out;
    }

    /**
     * What differs between {@code dir}'s files and its checksum file: one sentence per file that
     * does not match (with both hashes), is missing, or is not listed; empty when all match.
     */
    public static List<String> verify(Path dir) {
        Map<String, String> recorded;
        try {
            recorded = read(dir);
        } catch (IOException e) {
            return List.of("cannot read " + dir.resolve(FILE) + ": " + e.getMessage());
        }
        return verify(dir, recorded, FILE, Set.of(FILE));
    }

    /**
     * What differs between {@code dir}'s files and {@code recorded}, the path → SHA-256 that
     * {@link #write} returned when they were staged, with the checksum file's own added: like
     * {@link #verify(Path)}, but nothing comes from {@code dir}, so a file rewritten together with
     * every checksum file that lists it still shows. Every file must be recorded, checksum files
     * included.
     */
    public static List<String> verify(Path dir, Map<String, String> recorded) {
        return verify(dir, recorded, RECORDED, Set.of());
    }

    private static List<String> verify(Path dir, Map<String, String> recorded, String source, Set<String> ignored) {
        List<String> problems = new ArrayList<>();
        Map<String, String> actual = new TreeMap<>();
        try {
            for (String f : files(dir)) {
                if (!ignored.contains(f)) { // a checksum file does not list itself
                    actual.put(f, Sha256.of(dir.resolve(f)));
                }
            }
        } catch (IOException e) {
            return List.of("cannot read " + dir + ": " + e.getMessage());
        }
        Map<String, String> inside = new TreeMap<>();
        recorded.forEach((f, h) -> {
            if (dir.resolve(f).normalize().startsWith(dir.normalize())) {
                inside.put(f, h);
            } else {
                problems.add(source + " names a file outside " + dir + ": " + f);
            }
        });
        problems.addAll(compare(inside, actual, source));
        return problems;
    }

    /**
     * What differs between {@code recorded}, sums recorded at staging, and {@code actual} (both
     * name → SHA-256): one sentence per name whose hash differs (with both hashes), that is missing,
     * or that was not recorded; empty when they are the same.
     */
    public static List<String> compare(Map<String, String> recorded, Map<String, String> actual) {
        return compare(recorded, actual, RECORDED);
    }

    private static List<String> compare(Map<String, String> recorded, Map<String, String> actual, String source) {
        List<String> problems = new ArrayList<>();
        new TreeMap<>(recorded).forEach((f, h) -> {
            String now = actual.get(f);
            if (now == null) {
                problems.add(f + " is missing (recorded sha256 " + h + ")");
            } else if (!now.equals(h)) {
                problems.add("checksum mismatch for " + f + ": recorded sha256 " + h + ", the file now has " + now
                        + " (it changed after staging)");
            }
        });
        for (String f : new TreeMap<>(actual).keySet()) {
            if (!recorded.containsKey(f)) {
                problems.add(f + " is not in " + source + " (it appeared after staging)");
            }
        }
        return problems;
    }

    private static List<String> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).map(p -> dir.relativize(p).toString().replace('\\', '/'))
                    .sorted().toList();
        }
    }
}
