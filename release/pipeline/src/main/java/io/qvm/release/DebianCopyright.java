package io.qvm.release;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The licences a Debian package says it is under: the {@code License:} fields of its
 * {@code usr/share/doc/<package>/copyright} when that file is machine-readable (DEP-5, "Format:
 * https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"). A copyright file in free
 * form names no licences here: the SBOM then lists none for that package rather than a guess.
 *
 * <pre>
 * Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
 * Upstream-Name: zlib
 *
 * Files: *
 * Copyright: 1995-2013 Jean-loup Gailly and Mark Adler
 * License: Zlib                     &lt;- the synopsis: the first line of the field
 *  This software is provided 'as-is', ...
 * </pre>
 */
public final class DebianCopyright {

    /** At most this much of a copyright file is read (the largest in the image are about 200 KiB). */
    static final long MAX_BYTES = 4L << 20;

    private DebianCopyright() {
    }

    /**
     * The distinct licence synopses of a DEP-5 copyright file, in the order they first appear
     * (header, {@code Files} and standalone {@code License} paragraphs); empty when the text is not
     * DEP-5.
     */
    public static List<String> licenses(String text) {
        List<List<String>> paragraphs = paragraphs(text);
        if (paragraphs.isEmpty() || !isDep5(paragraphs.get(0))) {
            return List.of();
        }
        Set<String> out = new LinkedHashSet<>();
        for (List<String> p : paragraphs) {
            for (String line : p) {
                if (field(line, "license")) {
                    String synopsis = line.substring(line.indexOf(':') + 1).strip();
                    if (!synopsis.isEmpty()) {
                        out.add(synopsis);
                    }
                }
            }
        }
        return List.copyOf(out);
    }

    /**
     * The licences of package {@code name} extracted at {@code root}. A package whose doc
     * directory is a symlink to another package's (e.g. {@code libstdc++6 -> gcc-12-base}) says
     * "see there": that file is looked for in {@code others}, the image's other extracted packages.
     */
    public static List<String> licenses(String name, Path root, Collection<Path> others) throws IOException {
        Path doc = root.resolve("usr/share/doc").resolve(name);
        Path file = doc.resolve("copyright");
        if (Files.isSymbolicLink(doc)) {
            String target = Path.of(Files.readSymbolicLink(doc).toString()).getFileName().toString();
            file = null;
            for (Path other : others) {
                Path candidate = other.resolve("usr/share/doc").resolve(target).resolve("copyright");
                if (Files.isRegularFile(candidate)) {
                    file = candidate;
                    break;
                }
            }
        }
        if (file == null || !Files.isRegularFile(file)) {
            return List.of();
        }
        if (Files.size(file) > MAX_BYTES) {
            throw new IOException(file + " is larger than " + MAX_BYTES + " bytes");
        }
        return licenses(new String(Files.readAllBytes(file), StandardCharsets.UTF_8));
    }

    private static boolean isDep5(List<String> header) {
        for (String line : header) {
            if (field(line, "format") || field(line, "format-specification")) {
                String v = line.substring(line.indexOf(':') + 1).strip().toLowerCase(Locale.ROOT);
                return v.contains("copyright-format") || v.contains("dep5") || v.contains("dep-5");
            }
        }
        return false;
    }

    /** Whether {@code line} starts the field {@code name} (case-insensitive, not a continuation line). */
    private static boolean field(String line, String name) {
        int colon = line.indexOf(':');
        return colon > 0 && !Character.isWhitespace(line.charAt(0))
                && line.substring(0, colon).strip().equalsIgnoreCase(name);
    }

    /** Paragraphs (runs of non-blank lines); comment lines ({@code #}) dropped. */
    private static List<List<String>> paragraphs(String text) {
        List<List<String>> out = new ArrayList<>();
        List<String> current = new ArrayList<>();
        for (String line : text.split("\r?\n", -1)) {
            if (line.isBlank()) {
                if (!current.isEmpty()) {
                    out.add(current);
                    current = new ArrayList<>();
                }
            } else if (!line.startsWith("#")) {
                current.add(line);
            }
        }
        if (!current.isEmpty()) {
            out.add(current);
        }
        return out;
    }
}
