package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which jlink links the guest JRE, on every host OS (through the os.name seam). */
@Tag("unit")
class JreLinkerTest {
    private static final Runtime.Version JDK17 = Runtime.Version.parse("17.0.15+6");
    private static final Runtime.Version JDK21 = Runtime.Version.parse("21.0.5+11");

    @Test
    void aJdk17HomeFromTheEnvironmentLinksWhateverJdkRunsTheBuild(@TempDir Path tmp) throws Exception {
        Path home = fakeJdk(tmp.resolve("jdk-17"), "jlink");
        Path winHome = fakeJdk(tmp.resolve("jdk-17-win"), "jlink.exe");
        Map<String, String> env = Map.of(JreLinker.JDK17_HOME_ENV, home.toString());
        assertEquals(home.resolve("bin/jlink"), JreLinker.jlinkFor(env, "Mac OS X", JDK21, tmp.resolve("jdk-21")));
        assertEquals(home.resolve("bin/jlink"), JreLinker.jlinkFor(env, "Linux", JDK17, tmp.resolve("other")));
        assertEquals(winHome.resolve("bin/jlink.exe"), JreLinker.jlinkFor(
                Map.of(JreLinker.JDK17_HOME_ENV, winHome.toString()), "Windows 11", JDK21, tmp));
    }

    @Test
    void theRunningJdk17IsUsedWhenNothingIsSet(@TempDir Path tmp) throws Exception {
        Path home = fakeJdk(tmp.resolve("jdk"), "jlink");
        assertEquals(home.resolve("bin/jlink"), JreLinker.jlinkFor(Map.of(), "Linux", JDK17, home));
        Path jre = Files.createDirectories(tmp.resolve("jre/bin"));
        JreLinker.JdkNotFoundException e = assertThrows(JreLinker.JdkNotFoundException.class,
                () -> JreLinker.jlinkFor(Map.of(), "Linux", JDK17, jre.getParent()));
        assertTrue(e.getMessage().contains("full JDK 17"), e.getMessage());
    }

    @Test
    void anotherJdkWithoutAJdk17SaysWhatToInstallOnThisOs(@TempDir Path tmp) {
        String mac = assertThrows(JreLinker.JdkNotFoundException.class,
                () -> JreLinker.jlinkFor(Map.of(), "Mac OS X", JDK21, tmp)).getMessage();
        assertTrue(mac.contains("brew install openjdk@17"), mac);
        assertTrue(mac.contains("/usr/libexec/java_home -v 17"), mac);
        assertTrue(mac.contains(JreLinker.JDK17_HOME_ENV) && mac.contains("21.0.5+11"), mac);
        String win = assertThrows(JreLinker.JdkNotFoundException.class,
                () -> JreLinker.jlinkFor(Map.of(), "Windows Server 2022", JDK21, tmp)).getMessage();
        assertTrue(win.contains("winget install EclipseAdoptium.Temurin.17.JDK"), win);
        assertTrue(win.contains("$env:" + JreLinker.JDK17_HOME_ENV), win);
        String linux = assertThrows(JreLinker.JdkNotFoundException.class,
                () -> JreLinker.jlinkFor(Map.of(), "Linux", JDK21, tmp)).getMessage();
        assertTrue(linux.contains("java-17-openjdk-devel") && linux.contains("openjdk-17-jdk-headless"), linux);
    }

    @Test
    void aJdk17HomeWithoutJlinkIsRefusedNamingTheVariable(@TempDir Path tmp) {
        JreLinker.JdkNotFoundException e = assertThrows(JreLinker.JdkNotFoundException.class,
                () -> JreLinker.jlinkFor(Map.of(JreLinker.JDK17_HOME_ENV, tmp.toString()), "Linux", JDK21, tmp));
        assertTrue(e.getMessage().contains(JreLinker.JDK17_HOME_ENV + "=" + tmp), e.getMessage());
    }

    private static Path fakeJdk(Path home, String exe) throws Exception {
        Files.createDirectories(home.resolve("bin"));
        Files.writeString(home.resolve("bin").resolve(exe), "#!/bin/sh\n");
        return home;
    }
}
