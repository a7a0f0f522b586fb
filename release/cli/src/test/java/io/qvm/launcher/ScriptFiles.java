package io.qvm.launcher;

import io.qvm.image.ImageInfo;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** The repository's shell scripts: every {@code *.sh} and every file that starts with a shell's {@code #!}. */
final class ScriptFiles {

    /** Build outputs and other people's files: never scanned. */
    private static final Set<String> SKIPPED = Set.of(".git", "target", "out", "node_modules", ".idea", ".mvn");

    private ScriptFiles() {
    }

    static Path repoRoot() {
        return ImageInfo.repoRoot();
    }

    /** Every shell script of the checkout, sorted; templates ({@code *.in}) are not scripts yet. */
    static List<Path> shellScripts() throws IOException {
        Path root = repoRoot();
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> root.relativize(p).getNameCount() > 0)
                    .filter(p -> !skipped(root.relativize(p)))
                    .filter(Files::isRegularFile)
                    .filter(p -> !p.getFileName().toString().endsWith(".in"))
                    .filter(ScriptFiles::isShellScript)
                    .sorted()
                    .collect(Collectors.toList());
        }
    }

    private static boolean skipped(Path relative) {
        for (Path part : relative) {
            if (SKIPPED.contains(part.toString())) {
                return true;
            }
        }
        return false;
    }

    static boolean isShellScript(Path p) {
        if (p.getFileName().toString().endsWith(".sh")) {
            return true;
        }
        String first = firstLine(p);
        return first.startsWith("#!") && first.matches("#!\\s*/\\S*/(env\\s+)?(ba|da|k|z)?sh\\b.*");
    }

    static String firstLine(Path p) {
        try (InputStream in = Files.newInputStream(p)) {
            byte[] head = in.readNBytes(128);
            String s = new String(head, StandardCharsets.ISO_8859_1);
            int nl = s.indexOf('\n');
            return nl < 0 ? s : s.substring(0, nl);
        } catch (IOException e) {
            return "";
        }
    }

    /** {@code shellcheck} on PATH, if any. */
    static java.util.Optional<Path> shellcheck() {
        String path = System.getenv().getOrDefault("PATH", "");
        for (String d : path.split(java.io.File.pathSeparator)) {
            if (!d.isBlank()) {
                Path p = Path.of(d, "shellcheck");
                if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                    return java.util.Optional.of(p);
                }
            }
        }
        return java.util.Optional.empty();
    }
}
