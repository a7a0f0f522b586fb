package io.qvm.image;

import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Builds the OCI bundle directory runsc runs:
 * <pre>
 *   bundle/
 *     config.json.template      OciConfig.template(): the init fills in the boot-time limits
 *     rootfs/
 *       opt/qvm/jre/            jlinked JRE (target arch jmods), conf/fonts/fontconfig.properties
 *       opt/qvm/renderer-worker.jar
 *       usr/lib/&lt;triplet&gt;/      shared-library closure of the JRE, from pinned packages
 *       usr/share/fonts/truetype/dejavu/*.ttf
 *       lib -&gt; usr/lib (and lib64 -&gt; usr/lib64 on x86_64), for the program interpreter
 *       etc/passwd, etc/group   root and nobody only
 *       proc dev sys tmp        mount points (the root is read-only)
 * </pre>
 */
public final class BundleBuilder {
    /** Name of the template file inside the bundle directory. */
    public static final String TEMPLATE = "config.json.template";

    /**
     * What goes into the bundle.
     *
     * @param arch          target architecture
     * @param jmods         the target architecture's jmods directory
     * @param libraryRoots  extracted Debian packages that provide shared libraries
     * @param fontsRoot     extracted fonts-dejavu-core
     * @param workerJar     the worker's shaded jar
     * @param modules       JDK modules to link
     * @param limits        fixed limits (rlimits) for the template
     * @param cds           add the JDK's base CDS archive (not reproducible, see JreLinker)
     */
    public record Inputs(Arch arch, Path jmods, List<Path> libraryRoots, Path fontsRoot,
            Path workerJar, List<String> modules, WorkerLimits limits, boolean cds) {
        public Inputs {
            Objects.requireNonNull(arch, "arch");
            Objects.requireNonNull(jmods, "jmods");
            libraryRoots = List.copyOf(libraryRoots);
            Objects.requireNonNull(fontsRoot, "fontsRoot");
            Objects.requireNonNull(workerJar, "workerJar");
            modules = List.copyOf(modules);
            Objects.requireNonNull(limits, "limits");
        }
    }

    /** What was built. */
    public record Result(Path bundleDir, List<String> jlinkArgs,
            Map<String, SharedLibraryClosure.Library> libraries) {
    }

    private BundleBuilder() {
    }

    /**
     * Builds the bundle into {@code bundleDir}; its {@code rootfs/opt/qvm/jre} must not exist.
     */
    public static Result build(Inputs in, Path bundleDir) throws IOException {
        if (!Files.isRegularFile(in.workerJar())) {
            throw new ImageException("worker jar " + in.workerJar() + " does not exist: build it "
                    + "with 'mvn -q -pl renderer-worker -am package' or pass --worker-jar PATH");
        }
        Path rootfs = bundleDir.resolve("rootfs");
        Files.createDirectories(rootfs);
        for (String d : new String[] {"proc", "dev", "sys", "tmp", "etc", "opt/qvm"}) {
            Files.createDirectories(rootfs.resolve(d));
        }
        Path jre = rootfs.resolve(OciConfig.JAVA_HOME.substring(1));
        List<String> jlinkArgs = JreLinker.link(in.jmods(), in.modules(), jre, in.cds());
        Files.createDirectories(jre.resolve("conf/fonts"));
        Files.writeString(jre.resolve("conf/fonts/fontconfig.properties"), FontConfig.properties(),
                StandardCharsets.UTF_8);

        Path fontsOut = rootfs.resolve(FontConfig.DEJAVU_DIR.substring(1));
        Files.createDirectories(fontsOut);
        for (String file : FontConfig.files().values()) {
            Path src = in.fontsRoot().resolve(FontConfig.DEJAVU_DIR.substring(1)).resolve(file);
            if (!Files.isRegularFile(src)) {
                throw new ImageException("font " + file + " is not in " + in.fontsRoot()
                        + ": fonts-dejavu-core in the lock must provide " + FontConfig.DEJAVU_DIR
                        + "/" + file);
            }
            Files.copy(src, fontsOut.resolve(file));
        }

        List<Path> roots = new ArrayList<>(in.libraryRoots());
        Map<String, SharedLibraryClosure.Library> libs =
                new SharedLibraryClosure(in.arch(), roots).copyClosure(rootfs, jre);

        Files.copy(in.workerJar(), rootfs.resolve(OciConfig.WORKER_JAR.substring(1)));
        Files.writeString(rootfs.resolve("etc/passwd"),
                "root:x:0:0:root:/:/bin/false\nnobody:x:65534:65534:nobody:/tmp:/bin/false\n");
        Files.writeString(rootfs.resolve("etc/group"), "root:x:0:\nnogroup:x:65534:\n");
        Files.writeString(bundleDir.resolve(TEMPLATE), OciConfig.template(in.limits()));
        return new Result(bundleDir, jlinkArgs, libs);
    }
}
