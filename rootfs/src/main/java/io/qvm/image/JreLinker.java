package io.qvm.image;

import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Links the guest JRE with the running JDK's {@code jlink} against the <em>target
 * architecture's</em> jmods (taken from the pinned {@code openjdk-17-jdk-headless} package), so
 * one host builds the JRE for every architecture.
 *
 * <p>jlink requires the jmods' feature release to equal its own, so the build must run on a
 * JDK 17 (the pinned jmods are 17.0.x). The output is deterministic: same jmods, modules and
 * jlink give the same bytes (see the system-modules note in {@link #link}).
 */
public final class JreLinker {
    /**
     * What the worker needs (adr/0004 section 7): java.base, java.desktop (Java 2D, ImageIO,
     * fonts; pulls in java.datatransfer, java.prefs and java.xml) and jdk.xml.dom (Batik's DOM
     * interfaces). {@code jdeps --print-module-deps} on the worker jar also names java.sql, but
     * only for Jackson's optional ({@code requires static}) SQL date support; java.logging is not
     * needed (commons-logging is set to NoOpLog).
     */
    public static final List<String> DEFAULT_MODULES = List.of(
            "java.base", "java.desktop", "jdk.xml.dom");

    /**
     * Native libraries of java.desktop that a headless JVM never loads and that would need X11
     * or ALSA in the guest.
     */
    public static final List<String> EXCLUDED_FILES = List.of(
            "**/libawt_xawt.so", "**/libjawt.so", "**/libsplashscreen.so", "**/libjsound.so");

    private JreLinker() {
    }

    /** The architecture of a Debian jmods directory ({@code .../java-17-openjdk-<arch>/jmods}). */
    static Arch targetOf(Path jmods) {
        String dir = jmods.toAbsolutePath().getParent().getFileName().toString();
        return Arch.parse(dir.substring(dir.lastIndexOf('-') + 1));
    }

    /**
     * Runs jlink into {@code out} (which must not exist). Returns the arguments used.
     *
     * @param cds also generate the JDK's base CDS archive ({@code --generate-cds-archive}): it
     *            runs the linked JVM, so only when the target is the host's architecture, and
     *            JDK 17 writes a different archive every run, so the image is then not
     *            reproducible. Off by default.
     */
    public static List<String> link(Path jmods, List<String> modules, Path out, boolean cds) {
        if (!Files.isRegularFile(jmods.resolve("java.base.jmod"))) {
            throw new ImageException("no java.base.jmod in " + jmods
                    + ": the jmods directory must come from the target architecture's "
                    + "openjdk-17-jdk-headless package");
        }
        if (cds && !Arch.parse(System.getProperty("os.arch")).equals(targetOf(jmods))) {
            throw new ImageException("--cds needs a host of the target architecture (jlink runs "
                    + "the linked JVM to dump the archive); build without --cds");
        }
        int feature = Runtime.version().feature();
        if (feature != 17) {
            throw new ImageException("the image build must run on JDK 17 (jlink links jmods of its "
                    + "own feature release only; the pinned jmods are 17), but this is JDK "
                    + Runtime.version() + ": run it with a JDK 17 java");
        }
        Path jlink = Path.of(System.getProperty("java.home"), "bin", "jlink");
        if (!Files.isExecutable(jlink)) {
            throw new ImageException("this Java runtime has no " + jlink + ": run the image build "
                    + "with a full JDK 17");
        }
        List<String> args = new ArrayList<>();
        args.add(jlink.toString());
        args.add("--module-path");
        args.add(jmods.toString());
        args.add("--add-modules");
        args.add(String.join(",", modules.stream().sorted().toList()));
        args.add("--exclude-files=" + String.join(",", EXCLUDED_FILES));
        // JDK 17's system-modules plugin generates SystemModules$all from Set.of() iteration
        // order, which is salted per JVM run: two links differ in that one class. Without the
        // plugin the module graph is resolved at startup (measured: +20-30 ms on the host) and
        // lib/modules is bit-identical run to run.
        args.add("--disable-plugin");
        args.add("system-modules");
        // --strip-java-debug-attributes, not --strip-debug: on Linux the latter also runs the
        // host's objcopy over the native libraries, which fails for another architecture and
        // would make the output depend on the host's binutils. Debian's jmods carry stripped
        // native libraries already.
        args.add("--strip-java-debug-attributes");
        args.add("--no-header-files");
        args.add("--no-man-pages");
        args.add("--compress=2");
        if (cds) {
            args.add("--generate-cds-archive");
        }
        args.add("--output");
        args.add(out.toString());
        // A fresh JVM, not the in-process ToolProvider: jlink's generate-jli-classes plugin
        // spins java.lang.invoke holder classes from the *running* JVM's state, so a jlink run
        // in a JVM that already did other work (javac, lambdas, an earlier jlink) writes
        // different BoundMethodHandle$Species_* classes. A fresh jlink process starts from the
        // same state every time.
        String output;
        int rc;
        try {
            Process p = new ProcessBuilder(args).redirectErrorStream(true).start();
            p.getOutputStream().close();
            output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            rc = p.waitFor();
        } catch (IOException e) {
            throw new ImageException("cannot run " + jlink + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ImageException("interrupted while running jlink", e);
        }
        args.remove(0);
        if (rc != 0) {
            throw new ImageException("jlink failed (exit " + rc + "): jlink " + String.join(" ", args)
                    + "\n" + output);
        }
        if (!Files.isRegularFile(out.resolve("bin/java"))) {
            throw new ImageException("jlink exited 0 but " + out + "/bin/java does not exist: jlink "
                    + String.join(" ", args) + "\n" + output);
        }
        try {
            // Not used by a JRE that runs an application (only by jrt-fs clients of other JDKs).
            Files.deleteIfExists(out.resolve("lib/jrt-fs.jar"));
            // The archive for -XX:-UseCompressedOops (heaps above 32 GiB) is never used here.
            Files.deleteIfExists(out.resolve("lib/server/classes_nocoops.jsa"));
        } catch (IOException e) {
            throw new ImageException("cannot tidy the linked JRE in " + out + ": " + e, e);
        }
        return args;
    }
}
