package io.qvm.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ./qvm} launcher on stubbed hosts ({@link StubHost}): it runs the CLI as {@code java -jar
 * release/cli/target/qvm.jar} with the JDK {@code scripts/prereqs.sh} found (never the first {@code java}
 * on PATH, never a joined class path), builds with the Maven prereqs found under that JDK, and hands
 * a Windows java.exe the jar's path in Windows form.
 */
@Tag("unit")
class QvmLauncherTest {

    @TempDir
    Path tmp;

    /** A stub mvn that logs its call and JAVA_HOME, says one module line and "builds" the jar. */
    private static void mavenThatBuildsTheJar(StubHost h, String name) throws Exception {
        StubHost.script(name.contains("/") ? h.checkout.resolve(name) : h.bin.resolve(name),
                "printf 'mvn %s JAVA_HOME=%s\\n' \"$*\" \"$JAVA_HOME\" >> '" + h.log + "'\n"
                        + "echo '[INFO] Building qvm-release 0.1.0-SNAPSHOT                          [9/9]'\n"
                        + "mkdir -p release/cli/target && : > release/cli/target/qvm.jar");
    }

    private static List<String> javaArgs(StubHost h) throws Exception {
        return h.calls().stream().filter(l -> l.startsWith("arg ")).map(l -> l.substring(4))
                .collect(Collectors.toList());
    }

    @Test
    void onAMacTheCliRunsAsAJarOnTheJdkJavaHomeFoundNotOnTheJavaStub() throws Exception {
        StubHost h = new StubHost(tmp, "Darwin", "arm64");
        h.stub("java", "echo 'Unable to locate a Java Runtime.' >&2; exit 1");
        Path jdk = h.jdk(h.dir.resolve("jdk-17.0.9.jdk/Contents/Home"), "17.0.9", "");
        StubHost.script(h.root.resolve("usr/libexec/java_home"), "echo '" + jdk + "'");
        h.qemu(h.bin.resolve("qemu-system-aarch64"));
        mavenThatBuildsTheJar(h, "mvn");

        StubHost.Result r = h.run("qvm", "render", "samples/hello.svg", "-o", "hello.png").expect(0);

        List<String> calls = h.calls();
        assertEquals("mvn -B -ntp -DskipTests install JAVA_HOME=" + jdk, calls.get(0), "Maven runs on that JDK");
        assertEquals("java " + jdk.resolve("bin/java"), calls.get(1), "the CLI runs on that JDK");
        assertEquals(List.of("-jar", h.checkout.resolve("release/cli/target/qvm.jar").toString(), "render",
                "samples/hello.svg", "-o", "hello.png"), javaArgs(h), "no class path is joined");
        assertTrue(calls.contains("JAVA_HOME " + jdk), "the CLI sees JAVA_HOME: " + calls);
        r.stderrHas("[qvm]   module qvm-release [9/9]");
    }

    @Test
    void aBuiltCheckoutIsNotRebuiltAndQvmJavaOptsComeBeforeTheJar() throws Exception {
        StubHost h = new StubHost(tmp, "Linux", "x86_64");
        Path jdk = h.jdk(h.root.resolve("usr/lib/jvm/java-17-openjdk-amd64"), "17.0.15", "");
        for (String tool : new String[] {"dpkg-deb", "apt-get", "gzip"}) {
            h.stub(tool, "exit 0");
        }
        h.qemu(h.bin.resolve("qemu-system-x86_64"));
        h.qemu(h.bin.resolve("qemu-system-aarch64"));
        StubHost.script(h.root.resolve("bin/busybox"), "exit 0");
        Files.createDirectories(h.root.resolve("usr/share/fonts/truetype/dejavu"));
        Files.writeString(h.root.resolve("usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"), "font");
        Files.createDirectories(h.root.resolve("etc/ssl/certs"));
        Files.writeString(h.root.resolve("etc/ssl/certs/ca.pem"), "cert");
        // No mvn on PATH: the checkout's wrapper builds.
        mavenThatBuildsTheJar(h, "./mvnw");
        h.env("QVM_JAVA_OPTS", " -Xmx1g   -Dqvm.x=1 ");

        h.run("qvm", "--help").expect(0);
        assertTrue(h.calls().get(0).startsWith("mvn -B -ntp -DskipTests install JAVA_HOME=" + jdk), h.calls().toString());
        Files.delete(h.log);

        h.run("qvm", "ps").expect(0);
        assertFalse(h.calls().stream().anyMatch(l -> l.startsWith("mvn ")), "nothing changed, nothing is built: "
                + h.calls());
        assertEquals(List.of("-Xmx1g", "-Dqvm.x=1", "-jar", h.checkout.resolve("release/cli/target/qvm.jar").toString(),
                "ps"), javaArgs(h));
    }

    @Test
    void onWindowsTheJarsPathIsHandedToJavaExeInWindowsForm() throws Exception {
        StubHost h = new StubHost(tmp, "MINGW64_NT-10.0-19045", "x86_64");
        h.env("ProgramFiles", "C:\\Program Files");
        Path pf = h.root.resolve("c/Program Files");
        h.qemu(pf.resolve("qemu/qemu-system-x86_64.exe"));
        Path jdk = h.jdk(pf.resolve("Eclipse Adoptium/jdk-17.0.9.9-hotspot"), "17.0.9", ".exe");
        mavenThatBuildsTheJar(h, "mvn");
        // MSYS2's cygpath: -w /x/y → C:\msys64\x\y, -u C:\x\y → /c/x/y
        h.stub("cygpath", "case \"$1\" in\n"
                + "  -w) printf 'C:\\\\msys64%s\\n' \"$2\" | tr / '\\\\' ;;\n"
                + "  -u) printf '/c%s\\n' \"$(printf %s \"$2\" | cut -c3- | tr '\\\\' /)\" ;;\n"
                + "  *) exit 1 ;;\n"
                + "esac");

        h.run("qvm", "up").expect(0);

        String windowsJar = "C:\\msys64" + h.checkout.resolve("release/cli/target/qvm.jar").toString().replace('/', '\\');
        assertEquals(List.of("-jar", windowsJar, "up"), javaArgs(h));
        String windowsImages = "C:\\msys64" + h.checkout.resolve("out/image").toString().replace('/', '\\');
        assertTrue(h.calls().contains("QVM_IMAGE_DIR " + windowsImages), "the image directory too: " + h.calls());
        assertTrue(h.calls().contains("java " + jdk.resolve("bin/java.exe")), "the JDK found: " + h.calls());
    }

    @Test
    void whenPrereqsFailTheLauncherStopsBeforeBuildingOrRunning() throws Exception {
        StubHost h = new StubHost(tmp, "MINGW64_NT-10.0-19045", "x86_64");
        mavenThatBuildsTheJar(h, "mvn");
        StubHost.Result r = h.run("qvm", "up").expect(1);
        r.stderrHas("winget install --exact --id SoftwareFreedomConservancy.QEMU");
        assertEquals(List.of(), h.calls(), "neither Maven nor java ran");
    }
}
