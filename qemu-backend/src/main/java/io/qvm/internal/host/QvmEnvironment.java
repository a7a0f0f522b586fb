package io.qvm.internal.host;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Every {@code QVM_*} environment variable the library reads, and the default each stands for,
 * in one place. The classes that need a default ask this (built from {@link #system()} or, in
 * tests, from a map), never {@link System#getenv} themselves.
 *
 * <table>
 * <caption>Variables and defaults</caption>
 * <tr><th>variable</th><th>what</th><th>default</th></tr>
 * <tr><td>{@value #CACHE}</td><td>downloads, probe verdicts, templates, images</td><td>{@code ~/.cache/qvm}</td></tr>
 * <tr><td>{@value #IMAGE_DIR}</td><td>an image root (one directory per arch); when set, the only place
 *     the backend looks</td><td>— (then {@code <cache>/images}, then the local Maven repository)</td></tr>
 * <tr><td>{@value #MAVEN_REPO}</td><td>the local Maven repository the image artifact is looked for in, unless
 *     the system property {@code maven.repo.local} names one</td><td>{@code <localRepository>} of
 *     {@code ~/.m2/settings.xml}, else {@code ~/.m2/repository}</td></tr>
 * <tr><td>{@value #IMAGE_REPOSITORY}</td><td>a remote Maven repository the released image of this backend's
 *     version is fetched from, accepted only when it matches the hashes this jar pins
 *     ({@code PinnedImages}; adr/0011)</td><td>— (no download)</td></tr>
 * <tr><td>{@value #STATE}</td><td>the state directory (one directory per sandbox)</td><td>{@code ~/.local/state/qvm}</td></tr>
 * <tr><td>{@value #RUNTIME_DIR}</td><td>sockets</td><td>{@code $XDG_RUNTIME_DIR/qvm}, else {@code %TEMP%\qvm}
 *     on Windows, else {@code /tmp/qvm-<uid>}</td></tr>
 * <tr><td>{@value #QEMU}</td><td>QEMU binary or its directory, searched before PATH</td><td>—</td></tr>
 * <tr><td>{@value #TEMPLATES}</td><td>{@code off}: cold-boot every sandbox</td><td>templates on</td></tr>
 * <tr><td>{@value #TEMPLATE_WARMUP}</td><td>{@code off}: template VMs are saved without rendering qvm's
 *     warm-up documents first (adr/0006)</td><td>on</td></tr>
 * <tr><td>{@value #CLASS_ARCHIVES}</td><td>{@code off}: no boot makes or uses the worker's class archive (adr/0018)</td><td>on</td></tr>
 * <tr><td>{@value #QEMU_USER}</td><td>the unprivileged user QEMU drops to when qvm runs as root
 *     ({@code QemuUser})</td><td>{@code qvm}</td></tr>
 * </table>
 *
 * A variable that is unset or blank counts as unset. Where the guest image is looked for — an
 * explicit path ({@code QemuVmBackend.Builder#imageDir}), then {@value #IMAGE_DIR}, then the user
 * cache ({@link #userImageRoot()}), then the local Maven repository — is
 * {@code ImageResolver}'s; the library never looks for a source checkout (the
 * {@code qvm} CLI and launcher do: they point {@value #IMAGE_DIR} at the checkout's {@code out/image}).
 */
public final class QvmEnvironment {

    public static final String CACHE = "QVM_CACHE";
    public static final String IMAGE_DIR = "QVM_IMAGE_DIR";
    public static final String STATE = "QVM_STATE";
    public static final String RUNTIME_DIR = "QVM_RUNTIME_DIR";
    public static final String QEMU = "QVM_QEMU";
    public static final String TEMPLATES = "QVM_TEMPLATES";
    public static final String CLASS_ARCHIVES = "QVM_CLASS_ARCHIVES";
    public static final String TEMPLATE_WARMUP = "QVM_TEMPLATE_WARMUP";
    public static final String QEMU_USER = "QVM_QEMU_USER";
    /** The user QEMU drops to when this process is root and {@link #QEMU_USER} is unset. */
    public static final String DEFAULT_QEMU_USER = "qvm";
    public static final String MAVEN_REPO = "QVM_MAVEN_REPO";
    public static final String IMAGE_REPOSITORY = "QVM_IMAGE_REPOSITORY";

    private final Map<String, String> env;
    private final String home;
    private final String osName;

    private QvmEnvironment(Map<String, String> env, String home, String osName) {
        this.env = Map.copyOf(env);
        this.home = Objects.requireNonNull(home, "home");
        this.osName = Objects.requireNonNull(osName, "osName");
    }

    /** This process: its environment, {@code user.home} and {@code os.name}. */
    public static QvmEnvironment system() {
        return of(System.getenv(), System.getProperty("user.home"), System.getProperty("os.name", ""));
    }

    /** {@code env} with this process's {@code user.home} and {@code os.name}. */
    public static QvmEnvironment of(Map<String, String> env) {
        return of(env, System.getProperty("user.home"), System.getProperty("os.name", ""));
    }

    /** {@code env}, with {@code home} for the defaults under the home directory and {@code osName} for the runtime root. */
    public static QvmEnvironment of(Map<String, String> env, String home, String osName) {
        return new QvmEnvironment(env, home, osName);
    }

    /** The whole environment (other programs' variables too, e.g. {@code PATH}). */
    public Map<String, String> variables() {
        return env;
    }

    /** The variable's value, unless it is unset or blank. */
    public Optional<String> get(String name) {
        String v = env.get(name);
        return v == null || v.isBlank() ? Optional.empty() : Optional.of(v);
    }

    /** {@value #CACHE}, else {@code ~/.cache/qvm}. */
    public Path cacheDir() {
        return get(CACHE).map(Path::of).orElseGet(() -> Path.of(home, ".cache", "qvm"));
    }

    /** The home directory the defaults under {@code ~} are relative to. */
    public Path home() {
        return Path.of(home);
    }

    /** {@value #IMAGE_DIR}, if set: an image root the user named. */
    public Optional<Path> imageDirVariable() {
        return get(IMAGE_DIR).map(Path::of);
    }

    /** {@code images} in the {@link #cacheDir()}: the user's own image root (one directory per arch). */
    public Path userImageRoot() {
        return cacheDir().resolve("images");
    }

    /**
     * {@code images-maven} in the {@link #cacheDir()}: where image artifacts from the local Maven
     * repository are unpacked, one directory per artifact's SHA-256.
     */
    public Path mavenImageCache() {
        return cacheDir().resolve("images-maven");
    }

    /** {@code templates} in the {@link #cacheDir()}. */
    public Path templateRoot() {
        return cacheDir().resolve("templates");
    }

    /** {@code probe-cache.json} in the {@link #cacheDir()}. */
    public Path probeCacheFile() {
        return cacheDir().resolve("probe-cache.json");
    }

    /** {@value #STATE}, else {@code ~/.local/state/qvm}. */
    public Path stateRoot() {
        return get(STATE).map(Path::of).orElseGet(() -> Path.of(home, ".local", "state", "qvm"));
    }

    /**
     * {@value #RUNTIME_DIR}, else {@code qvm} in an absolute {@code $XDG_RUNTIME_DIR}, else
     * {@code qvm} in {@code %TEMP%} on Windows, else {@code /tmp/qvm-<uid>}.
     */
    public Path runtimeRoot() {
        Optional<Path> qvm = get(RUNTIME_DIR).map(Path::of);
        if (qvm.isPresent()) {
            return qvm.get();
        }
        Optional<String> xdg = get("XDG_RUNTIME_DIR").filter(x -> Path.of(x).isAbsolute());
        if (xdg.isPresent()) {
            return Path.of(xdg.get(), "qvm");
        }
        if (osName.startsWith("Windows")) {
            return Path.of(env.getOrDefault("TEMP", System.getProperty("java.io.tmpdir")), "qvm");
        }
        return Path.of("/tmp", "qvm-" + Posix.currentUid());
    }

    /** {@value #QEMU}: a QEMU binary or the directory holding it, if set. */
    public Optional<String> qemuOverride() {
        return get(QEMU);
    }

    /** {@value #QEMU_USER}, else {@code qvm}: who QEMU runs as when qvm runs as root. */
    public String qemuUser() {
        return get(QEMU_USER).map(String::strip).orElse(DEFAULT_QEMU_USER);
    }

    /** False when {@value #TEMPLATE_WARMUP} is {@code off}. */
    public boolean templateWarmUpEnabled() {
        return !"off".equals(env.get(TEMPLATE_WARMUP));
    }

    /** False when {@value #CLASS_ARCHIVES} is {@code off}. */
    public boolean classArchivesEnabled() {
        return !"off".equals(env.get(CLASS_ARCHIVES));
    }

    /** {@code class-archives} in the {@link #cacheDir()} (adr/0018). */
    public Path classArchiveRoot() {
        return cacheDir().resolve(io.qvm.internal.image.ClassArchives.DIR);
    }

    /** False when {@value #TEMPLATES} is {@code off}. */
    public boolean templatesEnabled() {
        return !"off".equals(env.get(TEMPLATES));
    }
}
