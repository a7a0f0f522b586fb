package io.qvm.release;

import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A release's checksum file, {@code <version>/SHA256SUMS}: one line per published file in
 * sha256sum format ({@code <64 hex>  <path>}), paths relative to the release directory with
 * {@code /}, sorted; {@code sha256sum -c SHA256SUMS} checks a release by hand. {@link #verify}
 * is what the release runs before it publishes: every listed file re-hashed, no file missing and
 * none unlisted.
 */
public final class Checksums {

    public static final String FILE = "SHA256SUMS";

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
        List<String> problems = new ArrayList<>();
        Map<String, String> recorded;
        try {
            recorded = read(dir);
        } catch (IOException e) {
            return List.of("cannot read " + dir.resolve(FILE) + ": " + e.getMessage());
        }
        List<String> present;
        try {
            present = files(dir);
        } catch (IOException e) {
            return List.of("cannot list " + dir + ": " + e.getMessage());
        }
        for (Map.Entry<String, String> e : recorded.entrySet()) {
            Path p = dir.resolve(e.getKey()).normalize();
            if (!p.startsWith(dir.normalize())) {
                problems.add(FILE + " names a file outside " + dir + ": " + e.getKey());
            } else if (!Files.isRegularFile(p)) {
                problems.add(e.getKey() + " is missing (recorded sha256 " + e.getValue() + ")");
            } else {
                try {
                    String actual = Sha256.of(p);
                    if (!actual.equals(e.getValue())) {
                        problems.add("checksum mismatch for " + e.getKey() + ": recorded sha256 " + e.getValue()
                                + ", the file now has " + actual + " (it changed after staging)");
                    }
                } catch (IOException ex) {
                    problems.add("cannot read " + p + ": " + ex.getMessage());
                }
            }
        }
        for (String f : present) {
            if (!f.equals(FILE) && !recorded.containsKey(f)) {
                problems.add(f + " is not in " + FILE + " (it appeared after staging)");
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
