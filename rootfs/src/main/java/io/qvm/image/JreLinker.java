package io.qvm.image;

import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Links the guest JRE with the running JDK's {@code jlink} against the <em>target
 * architecture's</em> jmods (taken from the pinned {@code openjdk-17-jdk-headless} package), so
 * one host builds the JRE for every architecture.
 *
 * <p>jlink requires the jmods' feature release to equal its own, so the jlink that runs must be
 * a JDK 17's (the pinned jmods are 17.0.x); the JVM running the build need not be. It is, in
 * order: {@value #JDK17_HOME_ENV}'s {@code bin/jlink}, else the running JDK's if it is a 17,
 * else a {@link JdkNotFoundException} that says what to install on this OS (see
 * {@link #jlinkFor}). The output is deterministic: same jmods and modules give the same bytes,
 * and measured on this host the same bytes from jlink 17.0.15 and 17.0.21 (adr/0010), so the
 * manifest records the feature release only ({@link #FEATURE}).
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

    /** The feature release of the pinned jmods, and so of the jlink that links them. */
    public static final int FEATURE = 17;

    /** A JDK 17 home whose jlink links the guest JRE when the build runs on another JDK. */
    public static final String JDK17_HOME_ENV = "QVM_JDK17_HOME";

    /** No JDK 17 jlink on this host: the message says what to install and what to set. */
    public static final class JdkNotFoundException extends ImageException {
        private static final long serialVersionUID = 1L;

        JdkNotFoundException(String message) {
            super(message);
        }
    }

    private JreLinker() {
    }

    /**
     * The jlink executable to run: {@code $QVM_JDK17_HOME/bin/jlink}, else the running JDK's
     * when it is a 17 (a JRE without jlink is refused), else {@link JdkNotFoundException}.
     * Pure but for file checks, so every host's answer is testable here; the macOS and Windows
     * texts are untested on a real host.
     *
     * @param env      the environment ({@value #JDK17_HOME_ENV})
     * @param osName   {@code os.name}
     * @param running  the running JVM's version
     * @param javaHome the running JVM's {@code java.home}
     */
    public static Path jlinkFor(Map<String, String> env, String osName, Runtime.Version running,
            Path javaHome) {
        String exe = osName.startsWith("Windows") ? "jlink.exe" : "jlink";
        String home = env.get(JDK17_HOME_ENV);
        if (home != null && !home.isBlank()) {
            Path jlink = Path.of(home.trim()).resolve("bin").resolve(exe);
            if (!Files.isRegularFile(jlink)) {
                throw new JdkNotFoundException(JDK17_HOME_ENV + "=" + home + " has no bin/" + exe
                        + ": point it at the home directory of a JDK 17 (not a JRE). " + install(osName));
            }
            return jlink;
        }
        if (running.feature() == FEATURE) {
            Path jlink = javaHome.resolve("bin").resolve(exe);
            if (!Files.isRegularFile(jlink)) {
                throw new JdkNotFoundException("this Java runtime (" + javaHome + ") has no bin/" + exe
                        + ": run the image build with a full JDK 17, or set " + JDK17_HOME_ENV
                        + " to one. " + install(osName));
            }
            return jlink;
        }
        throw new JdkNotFoundException("the guest JRE is linked from the pinned JDK " + FEATURE
                + " jmods, which only a JDK " + FEATURE + "'s jlink links, and this build runs on JDK "
                + running + " with " + JDK17_HOME_ENV + " unset. Any JDK 17.0.x gives the same image "
                + "bytes; the build may keep running on this JDK. " + install(osName));
    }

    private static String install(String osName) {
        if (osName.startsWith("Mac")) {
            return "On macOS: brew install openjdk@17, then export " + JDK17_HOME_ENV
                    + "=\"$(brew --prefix openjdk@17)/libexec/openjdk.jdk/Contents/Home\" (or, with any "
                    + "other JDK 17 installed: export " + JDK17_HOME_ENV + "=\"$(/usr/libexec/java_home -v 17)\").";
        }
        if (osName.startsWith("Windows")) {
            return "On Windows: winget install EclipseAdoptium.Temurin.17.JDK, then set " + JDK17_HOME_ENV
                    + " to its folder (PowerShell: $env:" + JDK17_HOME_ENV
                    + "=(Get-ChildItem 'C:\\Program Files\\Eclipse Adoptium\\jdk-17*')[0].FullName).";
        }
        return "On Linux: install your distribution's OpenJDK 17 JDK (Debian/Ubuntu: openjdk-17-jdk-headless, "
                + "Fedora: java-17-openjdk-devel, Arch: jdk17-openjdk), then export " + JDK17_HOME_ENV
                + "=/usr/lib/jvm/<its directory>.";
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
        Path jlink = jlinkFor(System.getenv(), System.getProperty("os.name"), Runtime.version(),
                Path.of(System.getProperty("java.home")));
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
