package io.qvm.e2e;

import static org.junit.jupiter.api.Assertions.fail;
import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Shared set-up of the end-to-end tests: the real image, a private state directory, visible progress. */
public final class E2e {

    private E2e() {
    }

    /**
     * The image the suite boots: {@code $QVM_IMAGE_DIR} (the {@code ./qvm} launcher sets it to the
     * checkout's {@code out/image}), else {@code out/image} of this checkout (Maven runs the tests
     * in the module's directory); `./qvm test` builds it before the tests run.
     */
    public static Path imageRoot() {
        return imageRoot(Arch.fromOsArch(System.getProperty("os.arch")).orElseThrow());
    }

    /** {@link #imageRoot()}, which must hold an image for {@code arch}. */
    public static Path imageRoot(Arch arch) {
        Path root = QvmEnvironment.system().get(QvmEnvironment.IMAGE_DIR).map(Path::of)
                .orElseGet(() -> Path.of("").toAbsolutePath().getParent().resolve("out").resolve("image"));
        if (!Files.isDirectory(root.resolve(arch.qemuName()))) {
            fail("no guest image at " + root.resolve(arch.qemuName()) + ": build it with ./qvm image build --arch "
                    + arch.id() + " (./qvm test does this before running the tests)");
        }
        return root;
    }

    /**
     * A backend whose sandboxes are clones of the suite's template (built by the first test that
     * needs it, then restored in a fraction of a second): what a server gets by default.
     */
    static QemuVmBackend backend(Path stateDir) {
        return QemuVmBackend.builder()
                .imageDir(imageRoot())
                .stateDirectory(stateDir)
                .templateDirectory(templateRoot())
                .progress(line -> log(line))
                .build();
    }

    /** A backend that cold-boots every sandbox: for the tests of the boot itself. */
    static QemuVmBackend coldBackend(Path stateDir) {
        return QemuVmBackend.builder()
                .imageDir(imageRoot())
                .stateDirectory(stateDir)
                .templates(false)
                .progress(line -> log(line))
                .build();
    }

    /**
     * The suite's templates: {@code $QVM_CACHE/templates} (default {@code ~/.cache/qvm/templates}),
     * the same place a user's sandboxes restore from, so a second run of the suite reuses them.
     */
    static Path templateRoot() {
        return io.qvm.internal.template.TemplateStore.defaultLocation().root();
    }

    /** Defaults, with deadlines generous enough for TCG on a busy 2-core machine. */
    static SandboxConfig.Builder config() {
        return SandboxConfig.builder()
                .bootTimeout(Duration.ofMinutes(6))
                .requestTimeout(Duration.ofMinutes(3));
    }

    static void log(String line) {
        System.out.println("[e2e " + LocalTime.now().withNano(0) + "] " + line);
        System.out.flush();
    }

    /**
     * A jar of every class in {@code mainClass}'s package (the test workers of {@code io.qvm.probe},
     * the server of {@code io.qvm.consumer}), {@code mainClass} its Main-Class.
     */
    static Path packageJar(Path jar, Class<?> mainClass) throws IOException {
        return packageJar(jar, mainClass, false);
    }

    /**
     * The time of every entry of a jar the tests write (1980-01-01, zip's first instant): with it
     * the same classes give the same jar, so the image built from it, and a template of that image
     * in the suite's store, can be the same from one run to the next.
     */
    static final long ENTRY_TIME = java.time.LocalDateTime.of(1980, 1, 1, 0, 0).atZone(java.time.ZoneId.systemDefault())
            .toInstant().toEpochMilli();

    /** A jar entry named {@code name} at {@link #ENTRY_TIME}. */
    static JarEntry entry(String name) {
        JarEntry e = new JarEntry(name);
        e.setTime(ENTRY_TIME);
        return e;
    }

    /**
     * A jar written to {@code o} that starts with {@code mf}, at {@link #ENTRY_TIME} (the
     * constructor that takes a manifest stamps it with the current time).
     */
    static JarOutputStream jar(OutputStream o, Manifest mf) throws IOException {
        JarOutputStream j = new JarOutputStream(o);
        j.putNextEntry(entry(java.util.jar.JarFile.MANIFEST_NAME));
        mf.write(j);
        j.closeEntry();
        return j;
    }

    private static Path packageJar(Path jar, Class<?> mainClass, boolean withEmptyBom) throws IOException {
        Files.createDirectories(jar.getParent());
        Manifest mf = new Manifest();
        mf.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        mf.getMainAttributes().put(Attributes.Name.MAIN_CLASS, mainClass.getName());
        try (OutputStream o = Files.newOutputStream(jar); JarOutputStream j = jar(o, mf)) {
            addPackage(j, mainClass);
            if (withEmptyBom) {
                j.putNextEntry(entry(io.qvm.image.WorkerLock.BOM_ENTRY));
                j.write(EMPTY_BOM.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                j.closeEntry();
            }
        }
        return jar;
    }

    /**
     * {@link #packageJar} for a test worker: with the BOM entry every worker jar carries, listing
     * no Maven dependency (the probe classes have none), so an image build pinned to
     * {@link #NO_DEPENDENCIES} accepts it.
     */
    static Path packageWorkerJar(Path jar, Class<?> mainClass) throws IOException {
        return packageJar(jar, mainClass, true);
    }

    /** A CycloneDX BOM of no components: a test worker's. */
    static final String EMPTY_BOM = "{\"bomFormat\": \"CycloneDX\", \"specVersion\": \"1.6\", \"components\": []}";

    /** The dependency lock of a test worker that has no Maven dependencies. */
    static final io.qvm.image.WorkerLock NO_DEPENDENCIES = io.qvm.image.WorkerLock.of(java.util.Map.of());

    /** Adds every class of {@code member}'s package, as built, to {@code j}. */
    static void addPackage(JarOutputStream j, Class<?> member) throws IOException {
        Path classes;
        try {
            classes = Path.of(member.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IOException(e);
        }
        try (Stream<Path> files = Files.walk(classes.resolve(member.getPackageName().replace('.', '/')))) {
            for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                j.putNextEntry(entry(classes.relativize(f).toString().replace('\\', '/')));
                j.write(Files.readAllBytes(f));
                j.closeEntry();
            }
        }
    }

    /** Pids of live processes whose command line mentions {@code needle} (e.g. a state directory). */
    static List<Long> processesMentioning(String needle) {
        return ProcessHandle.allProcesses()
                .filter(p -> p.pid() != ProcessHandle.current().pid())
                .filter(p -> p.info().commandLine().map(c -> c.contains(needle)).orElse(false))
                .map(ProcessHandle::pid)
                .collect(Collectors.toList());
    }

    /** The template {@code b} builds for {@code config}, as the store holds it (tests may look inside). */
    static io.qvm.internal.template.Template buildTemplate(io.qvm.QemuVmBackend b, io.qvm.SandboxConfig config) {
        io.qvm.admin.Templates.TemplateInfo info = b.admin().buildTemplate(config);
        return template(info.dir().getParent(), info.id());
    }

    /** The template {@code id} under {@code root}. */
    static io.qvm.internal.template.Template template(java.nio.file.Path root, String id) {
        try {
            return io.qvm.internal.template.TemplateStore.at(root).list().stream().filter(l -> l.id().equals(id))
                    .findFirst().map(l -> new io.qvm.internal.template.Template(l.dir(), l.meta().orElseThrow()))
                    .orElseThrow(() -> new AssertionError("no template " + id + " in " + root));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
