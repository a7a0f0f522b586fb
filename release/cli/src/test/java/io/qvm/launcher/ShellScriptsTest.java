package io.qvm.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.qvm.image.InitScript;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The repository's shell scripts: each passes shellcheck, and none can become CRLF on a Windows
 * checkout ({@code .gitattributes}, checked against {@code git ls-files --eol}).
 *
 * <p>shellcheck: {@code ./qvm test} installs it (scripts/prereqs.sh --test) and says so to this test
 * ({@code QVM_TEST_REQUIRE_SHELLCHECK=1}): there a missing shellcheck fails. Anywhere else (a single
 * module's tests on a developer's machine) it is skipped with the reason and the command that
 * installs it. The git check is skipped, with its reason, only where the sources are not a git
 * checkout (a source archive).
 */
@Tag("unit")
class ShellScriptsTest {

    @TempDir
    Path tmp;

    private static Path shellcheckOrSkip() {
        Optional<Path> sc = ScriptFiles.shellcheck();
        if (sc.isPresent()) {
            return sc.get();
        }
        String how = "install it (Debian/Ubuntu: apt-get install shellcheck; macOS: brew install shellcheck; "
                + "Windows: winget install --exact --id koalaman.shellcheck)";
        if ("1".equals(System.getenv("QVM_TEST_REQUIRE_SHELLCHECK"))) {
            fail("shellcheck is not on PATH, and ./qvm test checks the shell scripts with it (scripts/prereqs.sh "
                    + "--test should have installed it or stopped): " + how);
        }
        String reason = "shellcheck is not on PATH, so the shell scripts are not checked: " + how
                + ", or run ./qvm test, which does";
        System.err.println("[ShellScriptsTest] skipped: " + reason);
        Assumptions.abort(reason);
        throw new AssertionError("unreachable");
    }

    @Test
    void everyShellScriptPassesShellcheck() throws Exception {
        Path shellcheck = shellcheckOrSkip();
        Path root = ScriptFiles.repoRoot();
        List<Path> scripts = ScriptFiles.shellScripts();
        for (String expected : List.of("qvm", "mvnw", "scripts/prereqs.sh", ".ci/run")) {
            assertTrue(scripts.contains(root.resolve(expected)), "the scan must see " + expected + ": " + scripts);
        }
        List<String> cmd = new ArrayList<>(List.of(shellcheck.toString(), "--format=gcc", "--external-sources"));
        scripts.forEach(s -> cmd.add(root.relativize(s).toString()));
        Run r = run(root, cmd);
        assertEquals("", r.out, "shellcheck over " + scripts.size() + " scripts");
        assertEquals(0, r.exit, r.err);
    }

    /**
     * The guest's init, as the image build renders it from init.sh.in, for busybox's sh. Two findings
     * are the template's on purpose: RUNSC_VERSION is a record for people reading the init in an
     * image (SC2034), and each {@code exec switch_root}/{@code exec chroot} is followed by a
     * {@code fail} line (SC2093). Below "warning" (style and info) is not checked here.
     */
    @Test
    void theGuestInitAsRenderedPassesShellcheckForSh() throws Exception {
        Path shellcheck = shellcheckOrSkip();
        Path init = tmp.resolve("init");
        Files.writeString(init, InitScript.render("6.1.0-28-cloud-amd64", List.of(), "20250101.0"),
                StandardCharsets.UTF_8);
        Run r = run(tmp, List.of(shellcheck.toString(), "--format=gcc", "--shell=sh", "--severity=warning",
                "--exclude=SC2034,SC2093", init.toString()));
        assertEquals("", r.out, "shellcheck over the rendered init.sh.in");
        assertEquals(0, r.exit, r.err);
    }

    /** One line of {@code git ls-files --eol}: index and work-tree line endings, attributes, path. */
    record EolLine(String index, String attr, String path) {
        static EolLine parse(String line) {
            int tab = line.indexOf('\t');
            String[] f = line.substring(0, tab).trim().split("\\s+", 3);
            String attr = f.length > 2 ? f[2].trim().substring("attr/".length()) : "";
            return new EolLine(f[0].substring("i/".length()), attr, line.substring(tab + 1));
        }
    }

    @Test
    void gitAttributesKeepScriptsLfEverywhereAndDeclareEveryBinaryFile() throws Exception {
        Path root = ScriptFiles.repoRoot();
        Assumptions.assumeTrue(Files.exists(root.resolve(".git")),
                "not a git checkout (" + root + "): .gitattributes is checked where git is");
        Run r;
        try {
            r = run(root, List.of("git", "-c", "core.quotepath=off", "ls-files", "--eol"));
        } catch (IOException noGit) {
            Assumptions.abort("git cannot be run here (" + noGit.getMessage() + "): .gitattributes is not checked");
            throw new AssertionError("unreachable");
        }
        assertEquals(0, r.exit, r.err);
        List<EolLine> files = r.out.lines().map(EolLine::parse).collect(Collectors.toList());
        assertTrue(files.size() > 100, "git ls-files --eol listed " + files.size() + " files");
        List<String> problems = new ArrayList<>();
        for (EolLine f : files) {
            Path p = root.resolve(f.path());
            boolean unconverted = f.attr().contains("-text");
            if (f.index().equals("-text") && !unconverted) {
                problems.add(f.path() + ": binary, but .gitattributes does not say so (attr/" + f.attr() + ")");
            }
            if ((f.index().equals("crlf") || f.index().equals("mixed")) && !unconverted) {
                problems.add(f.path() + ": stored with " + f.index() + " line endings");
            }
            boolean script = f.path().endsWith(".sh") || f.path().endsWith(".in")
                    || (Files.isRegularFile(p) && ScriptFiles.isShellScript(p));
            if (script && !f.attr().equals("text eol=lf")) {
                problems.add(f.path() + ": a script run by a shell, checked out as attr/" + f.attr()
                        + " (must be: text eol=lf)");
            }
            if (f.path().endsWith(".cmd") && !f.attr().equals("text eol=crlf")) {
                problems.add(f.path() + ": run by cmd.exe, checked out as attr/" + f.attr() + " (must be: text eol=crlf)");
            }
            if (!script && !unconverted && !f.path().endsWith(".cmd") && !f.attr().contains("eol=lf")) {
                problems.add(f.path() + ": text without eol=lf (attr/" + f.attr() + ")");
            }
        }
        assertEquals(List.of(), problems, "git ls-files --eol against .gitattributes:\n  "
                + String.join("\n  ", problems) + "\n");
    }

    record Run(int exit, String out, String err) {
    }

    private static Run run(Path dir, List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).start();
        p.getOutputStream().close();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            p.waitFor();
            fail(String.join(" ", cmd) + " did not finish");
        }
        return new Run(p.exitValue(), out.join(), err.join());
    }

    private static String read(java.io.InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
