package io.qvm.deploy;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * The manifests under {@code kubernetes/}, rendered as a cluster would get them: {@code kubectl
 * kustomize DIR}, with whatever kubectl is on PATH. The manifests keep to what kubectl 1.20's
 * embedded kustomize (v2.0.3, Debian 12's {@code kubernetes-client}) renders, and kustomize v5 renders
 * them the same.
 *
 * <p>kubectl: {@code ./qvm test} installs it on Linux (scripts/prereqs.sh --test) and says so to these
 * tests ({@code QVM_TEST_REQUIRE_KUBECTL=1}): there a missing kubectl fails. Anywhere else (this
 * module's tests alone on a developer's machine) they are skipped with the reason and the command
 * that installs it — as the shell scripts' test does with shellcheck.
 */
final class Kustomize {

    /** The module's manifests; Maven runs the tests in the module's directory. */
    static final Path ROOT = Path.of("kubernetes").toAbsolutePath().normalize();

    private static final Map<String, String> RENDERED = new ConcurrentHashMap<>();
    private static final AtomicBoolean SAID_SKIPPED = new AtomicBoolean();

    private Kustomize() {
    }

    /** {@code kubectl} on PATH, if any. */
    static Optional<Path> kubectl() {
        String path = System.getenv().getOrDefault("PATH", "");
        for (String d : path.split(File.pathSeparator)) {
            if (!d.isBlank()) {
                for (String name : List.of("kubectl", "kubectl.exe")) {
                    Path p = Path.of(d, name);
                    if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                        return Optional.of(p);
                    }
                }
            }
        }
        return Optional.empty();
    }

    static Path kubectlOrSkip() {
        Optional<Path> k = kubectl();
        if (k.isPresent()) {
            return k.get();
        }
        String how = "install it (Debian: apt-get install kubernetes-client; macOS: brew install kubectl; "
                + "Windows: winget install --exact --id Kubernetes.kubectl), any kubectl 1.20 or later";
        if ("1".equals(System.getenv("QVM_TEST_REQUIRE_KUBECTL"))) {
            fail("kubectl is not on PATH, and ./qvm test renders the deployment manifests with kubectl kustomize "
                    + "(scripts/prereqs.sh --test should have installed it or stopped): " + how);
        }
        String reason = "kubectl is not on PATH, so the deployment manifests are not rendered and checked: " + how
                + ", or run ./qvm test, which does";
        if (!SAID_SKIPPED.getAndSet(true)) {
            System.err.println("[Kustomize] skipped: " + reason);
        }
        Assumptions.abort(reason);
        throw new AssertionError("unreachable");
    }

    /** Every directory under {@link #ROOT} with a kustomization.yaml, relative to it ("base", "overlays/kvm"). */
    static List<String> kustomizations() throws IOException {
        try (Stream<Path> s = Files.walk(ROOT)) {
            return s.filter(p -> p.getFileName().toString().equals("kustomization.yaml"))
                    .map(p -> ROOT.relativize(p.getParent()).toString().replace(File.separatorChar, '/'))
                    .sorted().collect(Collectors.toList());
        }
    }

    /** {@code kubectl kustomize ROOT/dir}'s output, rendered once per test JVM. */
    static String render(String dir) {
        Path kubectl = kubectlOrSkip();
        return RENDERED.computeIfAbsent(dir, d -> run(kubectl, ROOT.resolve(d)));
    }

    private static String run(Path kubectl, Path dir) {
        try {
            Process p = new ProcessBuilder(kubectl.toString(), "kustomize", dir.toString()).start();
            p.getOutputStream().close();
            CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
            CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
            if (!p.waitFor(2, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                p.waitFor();
                fail(kubectl + " kustomize " + dir + " did not finish in 2 minutes");
            }
            if (p.exitValue() != 0) {
                fail(kubectl + " kustomize " + dir + " exited " + p.exitValue() + ":\n" + err.join());
            }
            return out.join();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String read(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
