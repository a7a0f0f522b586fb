package io.qvm.container;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import io.qvm.image.PackageLock.Entry;
import io.qvm.image.PackageStore;
import io.qvm.protocol.image.Arch;

/**
 * The container image of {@code qvm serve}: one layer made of
 * <ul>
 *   <li>the data trees of the pinned .debs ({@link ContainerLock}, fetched and verified by the
 *       guest image's {@link PackageStore}, cached under {@code $QVM_CACHE}), less setuid/setgid
 *       files and device nodes ({@link Layer#skipped()});</li>
 *   <li>{@code /opt/qvm/qvm.jar} and {@code /opt/qvm/lib/*.jar}: the CLI as {@code release/cli/target} has it;</li>
 *   <li>{@code /opt/qvm/image/x86_64/*}: the guest image;</li>
 *   <li>{@code /etc/passwd}, {@code /etc/group} (root and {@code qvm}, 10001:10001, home
 *       {@code /var/lib/qvm}), {@code /etc/qvm/} for the tenants file, {@code /var/lib/qvm}
 *       owned by qvm, {@code /tmp} 1777;</li>
 * </ul>
 * and a config running {@code java -jar /opt/qvm/qvm.jar serve --tokens /etc/qvm/tenants.txt
 * --listen 0.0.0.0:8080} as 10001:10001.
 */
public final class ContainerImage {
    public static final int QVM_UID = 10001;
    public static final String JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
    public static final String TENANTS = "/etc/qvm/tenants.txt";
    /** 2026-01-01T00:00:00Z, the project's project.build.outputTimestamp. */
    public static final Instant DEFAULT_EPOCH = Instant.parse("2026-01-01T00:00:00Z");

    private ContainerImage() {
    }

    /** The process and labels of the image. */
    static OciImage.RunConfig runConfig(Map<String, String> labels) {
        return new OciImage.RunConfig(QVM_UID + ":" + QVM_UID,
                List.of(JAVA, "-jar", "/opt/qvm/qvm.jar", "serve"),
                List.of("--tokens", TENANTS, "--listen", "0.0.0.0:8080"),
                List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                        "HOME=/var/lib/qvm",
                        "QVM_IMAGE_DIR=/opt/qvm/image",
                        "QVM_STATE=/var/lib/qvm/state",
                        "QVM_CACHE=/var/lib/qvm/cache",
                        "QVM_RUNTIME_DIR=/var/lib/qvm/run"),
                List.of("8080/tcp"), "/var/lib/qvm", labels);
    }

    /** The files qvm adds on top of the packages. */
    static void addQvm(Layer layer, Path cliDir, Path guestImageDir) throws IOException {
        layer.file("etc/passwd", 0644, ("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                + "qvm:x:" + QVM_UID + ":" + QVM_UID + ":qvm serve:/var/lib/qvm:/usr/sbin/nologin\n")
                .getBytes(StandardCharsets.UTF_8));
        layer.file("etc/group", 0644, ("root:x:0:\nqvm:x:" + QVM_UID + ":\n").getBytes(StandardCharsets.UTF_8));
        layer.dir("etc/qvm", 0755, 0, 0);
        layer.dir("tmp", 01777, 0, 0);
        layer.dir("var/lib/qvm", 0755, QVM_UID, QVM_UID);
        layer.dir("opt/qvm/lib", 0755, 0, 0);
        layer.file("opt/qvm/qvm.jar", 0644, cliDir.resolve("qvm.jar"));
        for (Path jar : list(cliDir.resolve("lib"), ".jar")) {
            layer.file("opt/qvm/lib/" + jar.getFileName(), 0644, jar);
        }
        for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS")) {
            Path p = guestImageDir.resolve(f);
            if (!Files.isRegularFile(p)) {
                throw new IllegalArgumentException("the guest image " + guestImageDir + " has no " + f
                        + ": build it first (./qvm image build)");
            }
            layer.file("opt/qvm/image/x86_64/" + f, 0644, p);
        }
    }

    /** Builds the image into {@code out}. */
    public static OciImage.Written build(ContainerLock lock, PackageStore store, Path cliDir, Path guestImageDir,
            Instant epoch, Path out, Consumer<String> progress) throws IOException {
        Layer layer = new Layer();
        for (Entry e : lock.entries()) {
            layer.addTree(store.extracted(Arch.X86_64, e), e.label());
        }
        addQvm(layer, cliDir, guestImageDir);
        layer.skipped().forEach(s -> progress.accept("left out " + s));
        Map<String, String> labels = new TreeMap<>();
        labels.put("org.opencontainers.image.title", "qvm serve");
        labels.put("org.opencontainers.image.created", epoch.toString());
        labels.put("org.opencontainers.image.version", cliVersion(cliDir.resolve("qvm.jar")));
        labels.put("io.qvm.qemu.version", lock.version("qemu-system-x86"));
        labels.put("io.qvm.jre.version", lock.version("openjdk-17-jre-headless"));
        labels.put("io.qvm.container-lock.sha256", lock.sha256());
        labels.put("io.qvm.guest-image.sha256sums", OciImage.hex(guestImageDir.resolve("SHA256SUMS")));
        labels.put("io.qvm.cli.sha256", OciImage.hex(cliDir.resolve("qvm.jar")));
        return OciImage.write(layer, runConfig(labels), "qvm:" + labels.get("org.opencontainers.image.version"),
                epoch, out);
    }

    private static String cliVersion(Path jar) throws IOException {
        try (JarFile j = new JarFile(jar.toFile())) {
            var e = j.getEntry("META-INF/maven/io.qvm/qvm-cli/pom.properties");
            if (e == null) {
                return "unknown";
            }
            java.util.Properties p = new java.util.Properties();
            try (InputStream in = j.getInputStream(e)) {
                p.load(in);
            }
            return p.getProperty("version", "unknown");
        }
    }

    private static List<Path> list(Path dir, String suffix) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(dir + " does not exist: build the CLI first (mvn -DskipTests install)");
        }
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> l = new ArrayList<>(s.filter(p -> p.getFileName().toString().endsWith(suffix)).sorted().toList());
            return l;
        }
    }
}
