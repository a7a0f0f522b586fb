package io.qvm.launcher;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A host made of stubs, for running the launcher scripts as a Mac, Windows or Linux user would meet
 * them, on this Linux machine: a PATH of two directories only, {@code bin/} (the stubs: {@code
 * uname}, {@code java}, {@code brew}, {@code mvn}, {@code qemu-system-*}…) and {@code tools/}
 * (links to the few real utilities the scripts use: sed, grep, find…, never java, mvn or qemu), and
 * a directory that stands for {@code /} wherever the scripts look at a fixed path
 * ({@code QVM_PREREQS_ROOT}: {@code /usr/libexec/java_home}, {@code C:\Program Files\qemu},
 * {@code /usr/lib/jvm}). A checkout holds copies of the scripts under test, so that its root (where
 * {@code mvnw} and {@code release/cli/target/qvm.jar} are looked for) is this host's too.
 */
final class StubHost {

    /** The real utilities the scripts may call; everything else they find is a stub. */
    private static final List<String> TOOLS = List.of("bash", "sed", "grep", "head", "tr", "dirname", "sort",
            "ls", "find", "tee", "touch", "mkdir", "cat", "rm", "cut", "awk");

    final Path dir;
    final Path bin;
    final Path root;
    final Path checkout;
    /** Every stub that was run for its effect (a JDK's java given -jar, mvn) appends a line here. */
    final Path log;
    private final Map<String, String> env = new LinkedHashMap<>();

    StubHost(Path dir, String unameS, String unameM) throws IOException {
        this.dir = dir;
        this.bin = Files.createDirectories(dir.resolve("bin"));
        this.root = Files.createDirectories(dir.resolve("root"));
        this.checkout = Files.createDirectories(dir.resolve("checkout"));
        this.log = dir.resolve("calls.log");
        Path tools = Files.createDirectories(dir.resolve("tools"));
        for (String t : TOOLS) {
            tool(t);
        }
        Files.copy(ScriptFiles.repoRoot().resolve("scripts/prereqs.sh"),
                Files.createDirectories(checkout.resolve("scripts")).resolve("prereqs.sh"));
        Files.copy(ScriptFiles.repoRoot().resolve("qvm"), checkout.resolve("qvm"));
        executable(checkout.resolve("scripts/prereqs.sh"));
        executable(checkout.resolve("qvm"));
        stub("uname", "case \"$1\" in -s) echo '" + unameS + "' ;; -m) echo '" + unameM + "' ;; *) echo '"
                + unameS + "' ;; esac");
        stub("id", "echo 1000"); // never root: nothing is installed, no user is created
        env.put("PATH", bin + ":" + tools);
        env.put("HOME", dir.toString());
        env.put("QVM_PREREQS_ROOT", root.toString());
    }

    private static Path real(String tool) {
        for (String d : List.of("/usr/bin", "/bin", "/usr/local/bin")) {
            Path p = Path.of(d, tool);
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        throw new IllegalStateException("no " + tool + " on this machine");
    }

    /** A real utility on this host's PATH ({@code tools/<name>}, which runs the real one). */
    void tool(String name) throws IOException {
        script(dir.resolve("tools").resolve(name), "exec '" + real(name) + "' \"$@\"");
    }

    StubHost env(String name, String value) {
        env.put(name, value);
        return this;
    }

    /** An executable {@code bin/<name>}: a POSIX sh script with this body. */
    Path stub(String name, String body) throws IOException {
        return script(bin.resolve(name), body);
    }

    /** An executable file at {@code path} (under {@link #root} or anywhere). */
    static Path script(Path path, String body) throws IOException {
        Files.createDirectories(path.getParent());
        Files.writeString(path, "#!/bin/sh\n" + body + "\n", StandardCharsets.UTF_8);
        return executable(path);
    }

    private static Path executable(Path p) throws IOException {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        return p;
    }

    /**
     * A JDK at {@code home}: {@code bin/java}, {@code bin/javac}, {@code bin/jlink} (each with
     * {@code suffix}, ".exe" on Windows). Its java answers {@code -version} and {@code
     * -XshowSettings:properties} like a real one and logs any other call to {@link #log}.
     */
    Path jdk(Path home, String version, String suffix) throws IOException {
        String versionLine = "echo 'openjdk version \"" + version + "\" 2023-10-17' >&2";
        script(home.resolve("bin/java" + suffix), "case \"$1\" in\n"
                + "  -version) " + versionLine + "; exit 0 ;;\n"
                + "  -XshowSettings:properties) printf '    java.home = %s\\n' '" + home + "' >&2; " + versionLine
                + "; exit 0 ;;\n"
                + "esac\n"
                + "{ printf 'java %s\\n' \"$0\"; for a in \"$@\"; do printf 'arg %s\\n' \"$a\"; done; "
                + "printf 'JAVA_HOME %s\\n' \"$JAVA_HOME\"; printf 'QVM_IMAGE_DIR %s\\n' \"$QVM_IMAGE_DIR\"; } >> '"
                + log + "'");
        script(home.resolve("bin/javac" + suffix), "exit 0");
        script(home.resolve("bin/jlink" + suffix), "exit 0");
        return home;
    }

    /** A QEMU that says its version. */
    Path qemu(Path binary) throws IOException {
        return qemu(binary, "9.1.0");
    }

    /** A QEMU that says it is {@code version}. */
    Path qemu(Path binary, String version) throws IOException {
        return script(binary, "echo 'QEMU emulator version " + version + " (Debian)'");
    }

    /** {@code bash <checkout>/<script> args…} on this host; its exit code, stdout and stderr. */
    Result run(String script, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(real("bash").toString(), checkout.resolve(script).toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(checkout.toFile());
        pb.environment().clear();
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
        if (!p.waitFor(2, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            p.waitFor();
            fail(script + " did not finish: stderr so far\n" + err.getNow(""));
        }
        return new Result(p.exitValue(), out.join(), err.join());
    }

    /** The lines stubs wrote to {@link #log}; none when nothing was called. */
    List<String> calls() throws IOException {
        return Files.exists(log) ? Files.readAllLines(log) : List.of();
    }

    private static String read(java.io.InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    record Result(int exit, String stdout, String stderr) {
        Result expect(int code) {
            assertTrue(exit == code, "exit " + exit + ", expected " + code + "\nstdout:\n" + stdout + "\nstderr:\n"
                    + stderr);
            return this;
        }

        /** The NAME=value lines of {@code --env}. */
        Map<String, String> envLines() {
            Map<String, String> m = new LinkedHashMap<>();
            for (String line : stdout.split("\n")) {
                int eq = line.indexOf('=');
                if (eq > 0) {
                    m.put(line.substring(0, eq), line.substring(eq + 1));
                }
            }
            return m;
        }

        void stderrHas(String... parts) {
            for (String part : parts) {
                assertTrue(stderr.contains(part), "stderr lacks \"" + part + "\":\n" + stderr);
            }
        }
    }
}
