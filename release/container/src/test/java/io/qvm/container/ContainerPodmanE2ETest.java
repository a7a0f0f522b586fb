package io.qvm.container;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.qvm.image.PackageStore;

/**
 * The image as a user runs it: built from the pinned packages, the CLI and the guest image of this
 * checkout, loaded into podman, {@code qvm serve} warm ({@code /readyz}), one SVG rendered with a
 * bearer token, then {@code podman stop} (SIGTERM: the drain) and exit code 0. About 3 minutes
 * under TCG (the first start builds the template), so it is a release-time check behind a switch,
 * not part of {@code ./qvm test}'s 40 minutes: {@code ./qvm test -pl release/container
 * -Dqvm.container.e2e=true -Dtest=ContainerPodmanE2ETest -Dsurefire.failIfNoSpecifiedTests=false}
 * (the suite keeps the image's determinism: {@code LayerTest}, {@code OciImageTest}). Skipped,
 * saying why, without the switch, podman, the CLI jar or the guest image. Host-specific podman
 * flags go in {@code -Dqvm.podman.args} (this project's machine needs {@code --runtime runc
 * --ulimit nofile=20000:20000 --ulimit nproc=4096:4096}: crun cannot set rlimits or use its hybrid
 * cgroups there).
 */
@Tag("e2e")
@Tag("qemu")
class ContainerPodmanE2ETest {
    @TempDir
    Path tmp;

    @Test
    void servesARenderAndDrainsOnStop() throws Exception {
        Path root = Path.of("").toAbsolutePath();
        while (root != null && !Files.isRegularFile(root.resolve("samples/hello.svg"))) {
            root = root.getParent();
        }
        assumeTrue(Boolean.getBoolean("qvm.container.e2e"), "the container run-test is a release-time check (about 3 "
                + "minutes): -Dqvm.container.e2e=true runs it");
        assumeTrue(root != null, "not inside the qvm checkout");
        assumeTrue(run(List.of("podman", "--version"), 30).code == 0, "podman is not installed (apt-get install podman)");
        Path cli = root.resolve("release/cli/target");
        Path image = root.resolve("out/image/x86_64");
        assumeTrue(Files.isRegularFile(cli.resolve("qvm.jar")), "no release/cli/target/qvm.jar: mvn -DskipTests install");
        assumeTrue(Files.isRegularFile(image.resolve("manifest.json")), "no guest image: ./qvm image build");

        OciImage.Written w = ContainerImage.build(ContainerLock.bundled(),
                new PackageStore(PackageStore.defaultCache(), System.err::println), cli, image,
                ContainerImage.DEFAULT_EPOCH, tmp.resolve("oci"), System.err::println);
        Proc load = run(List.of("podman", "load", "-i", w.archive().toString()), 300);
        assertEquals(0, load.code, load.out);
        String ref = load.out.lines().filter(l -> l.startsWith("Loaded image")).map(l -> l.replaceAll(".*: ", ""))
                .findFirst().orElseThrow(() -> new AssertionError("podman load named no image: " + load.out));

        String token = UUID.randomUUID().toString();
        Path tenants = tmp.resolve("tenants.txt");
        Files.writeString(tenants, "e2e:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                .digest(token.getBytes(StandardCharsets.UTF_8))) + "\n");
        Files.setPosixFilePermissions(tenants, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String name = "qvm-e2e-" + UUID.randomUUID().toString().substring(0, 8);
        List<String> cmd = new ArrayList<>(List.of("podman", "run", "-d", "--name", name));
        String extra = System.getProperty("qvm.podman.args", "").trim();
        if (!extra.isEmpty()) {
            cmd.addAll(Arrays.asList(extra.split("\\s+")));
        }
        if (Files.exists(Path.of("/dev/kvm"))) {
            cmd.addAll(List.of("--device", "/dev/kvm"));
        }
        cmd.addAll(List.of("-p", "127.0.0.1:" + port + ":8080", "-v", tenants + ":/etc/qvm/tenants.txt:ro", ref));
        try {
            Proc started = run(cmd, 120);
            assertEquals(0, started.code, started.out);
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            URI base = URI.create("http://127.0.0.1:" + port);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
            while (true) {
                if (!"true".equals(run(List.of("podman", "inspect", "-f", "{{.State.Running}}", name), 30).out.trim())) {
                    fail("the container is no longer running: " + logs(name));
                }
                try {
                    if (http.send(HttpRequest.newBuilder(base.resolve("/readyz")).build(),
                            HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                        break;
                    }
                } catch (IOException notYet) {
                    // the port forward answers before serve listens
                }
                if (System.nanoTime() > deadline) {
                    fail("/readyz not 200 within 300 s: " + logs(name));
                }
                Thread.sleep(2000);
            }
            HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(base.resolve("/v1/render?width=480"))
                    .header("Authorization", "Bearer " + token).header("Content-Type", "image/svg+xml")
                    .timeout(Duration.ofSeconds(120))
                    .POST(HttpRequest.BodyPublishers.ofFile(root.resolve("samples/hello.svg"))).build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            assertEquals(200, r.statusCode(), () -> new String(r.body(), StandardCharsets.UTF_8) + logs(name));
            assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, Arrays.copyOf(r.body(), 4));
            assertEquals("480", r.headers().firstValue("X-Qvm-Width").orElse(""));
            assertEquals(0, run(List.of("podman", "stop", "-t", "120", name), 180).code);
            assertEquals("0", run(List.of("podman", "inspect", "-f", "{{.State.ExitCode}}", name), 30).out.trim(),
                    () -> "serve did not exit 0 on SIGTERM: " + logs(name));
        } finally {
            run(List.of("podman", "rm", "-f", name), 120);
            run(List.of("podman", "rmi", "-f", ref), 120);
        }
    }

    private static String logs(String name) {
        try {
            return "\n--- podman logs --tail 40 " + name + " ---\n" + run(List.of("podman", "logs", "--tail", "40", name), 30).out;
        } catch (IOException | InterruptedException e) {
            return "\n(no podman logs: " + e + ")";
        }
    }

    private record Proc(int code, String out) {
    }

    private static Proc run(List<String> argv, int seconds) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        } catch (IOException notThere) {
            return new Proc(127, notThere.toString());
        }
        Path out = Files.createTempFile("podman-", ".out");
        try {
            Thread copier = new Thread(() -> {
                try {
                    Files.copy(p.getInputStream(), out, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                } catch (IOException ignored) {
                    // the process went away
                }
            });
            copier.start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                copier.join(5000);
                return new Proc(124, String.join(" ", argv) + " timed out after " + seconds + " s");
            }
            copier.join(5000);
            return new Proc(p.exitValue(), Files.readString(out));
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
