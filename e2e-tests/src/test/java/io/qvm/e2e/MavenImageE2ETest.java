package io.qvm.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.host.QvmVersion;
import io.qvm.internal.image.ImageArtifact;
import io.qvm.internal.image.LocalMavenRepository;
import io.qvm.consumer.RenderOnce;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.Sha256;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12's promise: a server that depends on the backend and on the image artifact needs no
 * checkout of qvm to boot a sandbox. The real image ({@link E2e#imageRoot()}) is packed at the
 * Maven layout ({@link ImageArtifact}) into a temporary local repository; then a separate JVM
 * renders {@code samples/hello.svg} (its bytes on the JVM's stdin) with {@link RenderOnce}, a main
 * on {@code QemuVmBackend.create()}, and nothing of this checkout:
 * <ul>
 * <li>its working directory is a fresh empty directory, and stays empty;</li>
 * <li>its class path is the backend's jar and its dependencies' jars (this module's runtime
 * classpath, {@code backend-runtime.classpath}) and a jar of {@link RenderOnce} — no class
 * directories;</li>
 * <li>{@code -Dmaven.repo.local} names the temporary repository; {@code QVM_IMAGE_DIR} is unset;
 * the user cache ({@code QVM_CACHE}), home, state and runtime directories are empty temporary
 * ones, so the image can only come from the repository.</li>
 * </ul>
 * It must say the image came from the local Maven repository, print a PNG's size, exit 0 and leave
 * no QEMU behind. Templates are off in that JVM (one cold boot; clones are other tests' subject).
 */
@Tag("e2e")
@Tag("qemu")
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class MavenImageE2ETest {

    private static final Pattern RENDERED = Pattern.compile("RENDERED (\\d+)x(\\d+) (\\d+) bytes of PNG");

    @TempDir
    Path tmp;

    @Test
    void aServerWithTheBackendAndTheImageArtifactBootsASandboxFromAnEmptyDirectory() throws Exception {
        Arch arch = Arch.fromOsArch(System.getProperty("os.arch")).orElseThrow();
        String version = QvmVersion.current().orElseThrow(() -> new AssertionError("the backend has no version"));
        Path repo = tmp.resolve("m2");
        Path zip = ImageArtifact.zip(new LocalMavenRepository(repo, "the test's"), version, arch);
        pack(E2e.imageRoot().resolve(arch.qemuName()), zip);
        E2e.log("packed the image into " + zip + " (" + Files.size(zip) / (1 << 20) + " MiB)");

        Path work = Files.createDirectories(tmp.resolve("work"));
        Path home = Files.createDirectories(tmp.resolve("home"));
        Path cache = tmp.resolve("cache");
        Path state = tmp.resolve("state");
        List<String> classPath = new ArrayList<>(backendClassPath());
        classPath.add(E2e.packageJar(tmp.resolve("consumer.jar"), RenderOnce.class).toString()); // the server's own code

        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-D" + LocalMavenRepository.PROPERTY + "=" + repo, "-Duser.home=" + home,
                "-cp", String.join(File.pathSeparator, classPath), RenderOnce.class.getName())
                .directory(work.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT);
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("QVM_") && !k.equals(QvmEnvironment.QEMU)
                && !k.equals(QvmEnvironment.QEMU_USER)); // QVM_IMAGE_DIR above all
        env.put("HOME", home.toString());
        env.put(QvmEnvironment.CACHE, cache.toString());
        env.put(QvmEnvironment.STATE, state.toString());
        env.put(QvmEnvironment.RUNTIME_DIR, tmp.resolve("run").toString());
        env.put(QvmEnvironment.TEMPLATES, "off");
        // One cold boot from an empty cache: making the class archive would only add its time
        // (SandboxLifecycleE2ETest proves the archive).
        env.put(QvmEnvironment.CLASS_ARCHIVES, "off");
        E2e.log("starting the server JVM in " + work + " with " + classPath.size() + " jars");

        Process child = pb.start();
        CompletableFuture<List<String>> out = CompletableFuture.supplyAsync(() -> lines(child));
        try (OutputStream in = child.getOutputStream()) {
            in.write(Files.readAllBytes(checkout().resolve("samples").resolve("hello.svg")));
        }
        if (!child.waitFor(15, TimeUnit.MINUTES)) {
            child.destroyForcibly();
            fail("the server JVM did not finish within 15 minutes");
        }
        List<String> lines = out.get(1, TimeUnit.MINUTES);
        assertEquals(0, child.exitValue(), "the server JVM's exit status; it printed " + lines);

        Path unpacked = cache.resolve("images-maven").resolve(Sha256.of(zip)).resolve(arch.qemuName());
        assertTrue(lines.contains("IMAGE MAVEN_REPOSITORY " + unpacked), "the image came from the repository: " + lines);
        Matcher m = lines.stream().map(RENDERED::matcher).filter(Matcher::matches).findFirst()
                .orElseThrow(() -> new AssertionError("no PNG rendered: " + lines));
        assertTrue(Integer.parseInt(m.group(1)) > 0 && Integer.parseInt(m.group(2)) > 0 && Integer.parseInt(m.group(3)) > 8,
                m.group());

        await().atMost(Duration.ofMinutes(1)).until(() -> E2e.processesMentioning(state.toString()).isEmpty());
        assertEquals(List.of(), entries(state.resolve("sandboxes")), "no sandbox state left behind");
        assertEquals(List.of(), entries(work), "the server wrote nothing where it ran");
    }

    /** The zip the release installs: the image directory's files at the zip's root. */
    private static void pack(Path imageDir, Path zip) throws IOException {
        Files.createDirectories(zip.getParent());
        try (OutputStream file = Files.newOutputStream(zip); ZipOutputStream z = new ZipOutputStream(file)) {
            z.setLevel(1); // the initramfs is compressed already (LZ4)
            List<String> names = new ArrayList<>(ImageArtifact.REQUIRED);
            names.addAll(ImageArtifact.OPTIONAL);
            for (String name : names) {
                Path f = imageDir.resolve(name);
                if (!Files.isRegularFile(f)) {
                    assertTrue(ImageArtifact.OPTIONAL.contains(name), "the image at " + imageDir + " has no " + name);
                    continue;
                }
                z.putNextEntry(new ZipEntry(name));
                Files.copy(f, z);
                z.closeEntry();
            }
        }
    }

    /** This module's runtime classpath: the backend and its dependencies, each a jar. */
    private static List<String> backendClassPath() throws IOException {
        Path file = Path.of(System.getProperty("qvm.backend.classpath", "target/backend-runtime.classpath"));
        assertTrue(Files.isRegularFile(file), "no " + file + ": Maven writes it (generate-test-resources)");
        List<String> entries = List.of(Files.readString(file).strip().split(Pattern.quote(File.pathSeparator)));
        for (String e : entries) {
            assertTrue(e.endsWith(".jar") && Files.isRegularFile(Path.of(e)), "the backend's class path holds " + e
                    + ", not a jar: run the e2e tests with mvn verify (the reactor packages the backend first), or after"
                    + " mvn install");
        }
        assertTrue(entries.stream().anyMatch(e -> Path.of(e).getFileName().toString().startsWith("qvm-qemu-backend-")),
                "the backend's jar is on it: " + entries);
        return entries;
    }

    private static List<String> lines(Process child) {
        List<String> lines = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            String l;
            while ((l = r.readLine()) != null) {
                E2e.log("[server] " + l);
                lines.add(l);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return lines;
    }

    /** The checkout (Maven runs the tests in the module's directory): only this test reads it, never the server. */
    private static Path checkout() {
        return Path.of("").toAbsolutePath().getParent();
    }

    private static List<Path> entries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }
}
