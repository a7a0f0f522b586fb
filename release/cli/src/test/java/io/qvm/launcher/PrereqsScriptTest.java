package io.qvm.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code scripts/prereqs.sh} as a Mac, Windows (Git Bash, MSYS2, Cygwin) and Linux user meets it,
 * on stubbed hosts ({@link StubHost}: a stubbed {@code uname}, {@code java}, {@code java_home},
 * {@code brew}, {@code cygpath}, QEMU, on a PATH with nothing real of the kind): the exit code, what
 * it says is missing and how to get it, and the JDK it hands the launcher ({@code --env}).
 */
@Tag("unit")
class PrereqsScriptTest {

    @TempDir
    Path tmp;

    // ---- macOS ----------------------------------------------------------------------------------

    /** A Mac whose only java is the /usr/bin/java stub (no JDK installed), with QEMU. */
    private StubHost macWithoutJdk() throws Exception {
        StubHost h = new StubHost(tmp, "Darwin", "arm64");
        h.stub("java", "echo 'The operation couldn'\"'\"'t be completed. Unable to locate a Java Runtime.' >&2; exit 1");
        StubHost.script(h.root.resolve("usr/libexec/java_home"),
                "echo 'Unable to find any JVMs matching version \"17+\".' >&2; exit 1");
        h.qemu(h.bin.resolve("qemu-system-aarch64"));
        h.stub("mvn", "exit 0");
        return h;
    }

    @Test
    void onAMacTheJavaStubWithoutAJdkIsNoJdkAndTheFixIsBrewsOpenjdk17() throws Exception {
        StubHost h = macWithoutJdk();
        StubHost.Result r = h.run("scripts/prereqs.sh").expect(1);
        r.stderrHas("a JDK 17 or later", "does not run (macOS's stub: no JDK is installed)",
                "brew install openjdk@17", "keg-only");
        assertFalse(r.stderr().contains("QEMU ("), "QEMU is there:\n" + r.stderr());
    }

    @Test
    void onAMacTheJdkIsTheOneJavaHomeListsAndItIsHandedToTheLauncher() throws Exception {
        StubHost h = macWithoutJdk();
        Path jdk = h.jdk(h.dir.resolve("Library/Java/JavaVirtualMachines/temurin-17.jdk/Contents/Home"), "17.0.9", "");
        StubHost.script(h.root.resolve("usr/libexec/java_home"),
                "[ \"$1 $2\" = '-v 17+' ] && echo '" + jdk + "' && exit 0; exit 1");
        StubHost.Result r = h.run("scripts/prereqs.sh", "--env").expect(0);
        assertEquals(jdk.toString(), r.envLines().get("JAVA_HOME"), r.stderr());
        assertEquals(h.bin.resolve("mvn").toString(), r.envLines().get("QVM_MVN"));
        r.stderrHas("/usr/libexec/java_home -v 17+", "Java 17", "QEMU emulator version 9.1.0");
    }

    @Test
    void onAMacHomebrewsKegOnlyOpenjdk17IsFoundOffPathAndJavaHomeIsPointedAtIt() throws Exception {
        StubHost h = macWithoutJdk();
        Path keg = h.dir.resolve("homebrew/opt/openjdk@17");
        Path home = h.jdk(keg.resolve("libexec/openjdk.jdk/Contents/Home"), "17.0.13", "");
        h.stub("brew", "[ \"$1\" = --prefix ] || exit 1; echo '" + h.dir.resolve("homebrew/opt") + "/'\"$2\"");
        StubHost.Result r = h.run("scripts/prereqs.sh", "--env").expect(0);
        assertEquals(home.toString(), r.envLines().get("JAVA_HOME"), r.stderr());
        r.stderrHas("Homebrew's openjdk@17 (keg-only)", "export JAVA_HOME=" + home);
    }

    @Test
    void onAMacWithoutMavenTheCheckoutsWrapperStandsIn() throws Exception {
        StubHost h = macWithoutJdk();
        Files.delete(h.bin.resolve("mvn"));
        Path jdk = h.jdk(h.dir.resolve("jdk17"), "17.0.9", "");
        StubHost.script(h.root.resolve("usr/libexec/java_home"), "echo '" + jdk + "'");
        StubHost.Result missing = h.run("scripts/prereqs.sh").expect(1);
        missing.stderrHas("Maven (no mvn on PATH and no mvnw in", "brew install maven");
        Path mvnw = StubHost.script(h.checkout.resolve("mvnw"), "exit 0");
        assertEquals(mvnw.toString(), h.run("scripts/prereqs.sh", "--env").expect(0).envLines().get("QVM_MVN"));
    }

    @Test
    void forTheTestsAMacAlsoNeedsShellcheckAndIsToldHowToGetIt() throws Exception {
        StubHost h = macWithoutJdk();
        Path jdk = h.jdk(h.dir.resolve("jdk17"), "17.0.9", "");
        StubHost.script(h.root.resolve("usr/libexec/java_home"), "echo '" + jdk + "'");
        h.run("scripts/prereqs.sh").expect(0);
        h.run("scripts/prereqs.sh", "--test").expect(1).stderrHas("shellcheck", "brew install shellcheck");
        h.stub("shellcheck", "exit 0");
        h.run("scripts/prereqs.sh", "--test").expect(0);
    }

    // ---- Windows --------------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"MINGW64_NT-10.0-19045", "MSYS_NT-10.0-19045", "CYGWIN_NT-10.0-19045"})
    void onWindowsNothingInstalledIsNamedWithTheCommandsThatInstallIt(String uname) throws Exception {
        StubHost h = new StubHost(tmp, uname, "x86_64");
        StubHost.Result r = h.run("scripts/prereqs.sh").expect(1);
        r.stderrHas("a JDK 17 or later", "winget install --exact --id EclipseAdoptium.Temurin.17.JDK",
                "choco install temurin17", "scoop install java/temurin17-jdk",
                "qemu-system-x86_64.exe: not in $QVM_QEMU, on PATH or in C:\\Program Files\\qemu",
                "winget install --exact --id SoftwareFreedomConservancy.QEMU", "choco install qemu",
                "scoop install qemu", "https://qemu.weilnetz.de/w64/",
                "Maven (no mvn on PATH and no mvnw in", "open a new terminal");
    }

    /**
     * Git Bash and MSYS2: QEMU from its installer (C:\Program Files\qemu, not on PATH), a Temurin
     * JDK under C:\Program Files\Eclipse Adoptium, no Maven but the wrapper: all there.
     */
    @ParameterizedTest
    @ValueSource(strings = {"MINGW64_NT-10.0-19045", "MSYS_NT-10.0-22631"})
    void onWindowsQemuInProgramFilesAndAnInstalledJdkAreFound(String uname) throws Exception {
        StubHost h = new StubHost(tmp, uname, "x86_64");
        h.env("ProgramFiles", "C:\\Program Files");
        Path pf = h.root.resolve("c/Program Files");
        Path qemu = h.qemu(pf.resolve("qemu/qemu-system-x86_64.exe"));
        Path jdk = h.jdk(pf.resolve("Eclipse Adoptium/jdk-17.0.9.9-hotspot"), "17.0.9", ".exe");
        Path mvnw = StubHost.script(h.checkout.resolve("mvnw"), "exit 0");
        StubHost.Result r = h.run("scripts/prereqs.sh", "--env").expect(0);
        assertEquals(jdk.toString(), r.envLines().get("JAVA_HOME"), r.stderr());
        assertEquals(mvnw.toString(), r.envLines().get("QVM_MVN"));
        r.stderrHas("QEMU: " + qemu, "QEMU emulator version 9.1.0");
    }

    /** Cygwin names C: /cygdrive/c (cygpath -u); QVM_QEMU may name QEMU's directory the Windows way. */
    @Test
    void onCygwinPathsGoThroughCygpathAndQvmQemuNamesQemusDirectory() throws Exception {
        StubHost h = new StubHost(tmp, "CYGWIN_NT-10.0-19045", "x86_64");
        // cygpath -u 'D:\a\b' → /cygdrive/d/a/b
        h.stub("cygpath", "[ \"$1\" = -u ] || exit 1; d=$(printf %s \"$2\" | cut -c1 | tr 'A-Z' 'a-z'); "
                + "printf '/cygdrive/%s%s\\n' \"$d\" \"$(printf %s \"$2\" | cut -c3- | tr '\\\\' /)\"");
        h.env("ProgramFiles", "C:\\Program Files");
        h.env("QVM_QEMU", "D:\\tools\\qemu");
        h.env("JAVA_HOME", "C:\\Program Files\\Microsoft\\jdk-17.0.13.11-hotspot");
        Path qemu = h.qemu(h.root.resolve("cygdrive/d/tools/qemu/qemu-system-x86_64.exe"));
        h.jdk(h.root.resolve("cygdrive/c/Program Files/Microsoft/jdk-17.0.13.11-hotspot"), "17.0.13", ".exe");
        h.stub("mvn", "exit 0");
        // Both are taken as cygpath gives them, here without the stand-in root: neither is there. The
        // JDK is found where Microsoft's installer puts it; QEMU is not.
        StubHost.Result r = h.run("scripts/prereqs.sh", "--env").expect(1);
        r.stderrHas("qemu-system-x86_64.exe: not in $QVM_QEMU");
        assertFalse(r.stderr().contains("a JDK 17"), r.stderr());
        h.env("QVM_QEMU", h.root.resolve("cygdrive/d/tools/qemu").toString());
        StubHost.Result ok = h.run("scripts/prereqs.sh", "--env").expect(0);
        assertEquals(h.root.resolve("cygdrive/c/Program Files/Microsoft/jdk-17.0.13.11-hotspot").toString(),
                ok.envLines().get("JAVA_HOME"), ok.stderr());
        ok.stderrHas("QEMU: " + qemu);
    }

    @Test
    void onWindowsAJdkOlderThan17IsNamedAsSuch() throws Exception {
        StubHost h = new StubHost(tmp, "MINGW64_NT-10.0-19045", "x86_64");
        h.env("ProgramFiles", "C:\\Program Files");
        Path pf = h.root.resolve("c/Program Files");
        h.qemu(pf.resolve("qemu/qemu-system-x86_64.exe"));
        h.jdk(pf.resolve("Java/jdk1.8.0_402"), "1.8.0_402", ".exe");
        h.stub("mvn", "exit 0");
        h.run("scripts/prereqs.sh").expect(1).stderrHas("Java/jdk1.8.0_402 is Java 8; qvm needs 17 or later");
    }

    // ---- Linux ----------------------------------------------------------------------------------

    /** A Debian host with everything but a JDK 17: java on PATH is 11. Not root (id says 1000). */
    private StubHost linuxWithJava11() throws Exception {
        StubHost h = new StubHost(tmp, "Linux", "x86_64");
        for (String tool : new String[] {"dpkg-deb", "apt-get", "gzip", "mvn"}) {
            h.stub(tool, "exit 0");
        }
        h.qemu(h.bin.resolve("qemu-system-x86_64"));
        h.qemu(h.bin.resolve("qemu-system-aarch64"));
        Path jdk11 = h.jdk(h.root.resolve("usr/lib/jvm/java-11-openjdk-amd64"), "11.0.21", "");
        Files.createSymbolicLink(h.bin.resolve("java"), jdk11.resolve("bin/java"));
        StubHost.script(h.root.resolve("bin/busybox"), "exit 0");
        Files.createDirectories(h.root.resolve("usr/share/fonts/truetype/dejavu"));
        Files.writeString(h.root.resolve("usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"), "font");
        Files.createDirectories(h.root.resolve("etc/ssl/certs"));
        Files.writeString(h.root.resolve("etc/ssl/certs/ca.pem"), "cert");
        return h;
    }

    @Test
    void onLinuxAJava11OnPathIsNotEnoughAndTheAptLineNamesOpenjdk17() throws Exception {
        StubHost h = linuxWithJava11();
        StubHost.Result r = h.run("scripts/prereqs.sh").expect(1);
        r.stderrHas("java-11-openjdk-amd64 is Java 11; qvm needs 17 or later",
                "sudo apt-get install -y --no-install-recommends openjdk-17-jdk-headless");
    }

    @Test
    void onLinuxAJdk17BesideTheDefaultJava11IsTheOneHandedToTheLauncher() throws Exception {
        StubHost h = linuxWithJava11();
        Path jdk17 = h.jdk(h.root.resolve("usr/lib/jvm/java-17-openjdk-amd64"), "17.0.15", "");
        StubHost.Result r = h.run("scripts/prereqs.sh", "--env", "--quiet").expect(0);
        assertEquals(jdk17.toString(), r.envLines().get("JAVA_HOME"));
        assertEquals("", r.stderr(), "--quiet says nothing when all is well");
    }

    @Test
    void onLinuxTheTestsAlsoNeedShellcheckFromApt() throws Exception {
        StubHost h = linuxWithJava11();
        h.jdk(h.root.resolve("usr/lib/jvm/java-17-openjdk-amd64"), "17.0.15", "");
        h.run("scripts/prereqs.sh", "--test").expect(1)
                .stderrHas("sudo apt-get install -y --no-install-recommends shellcheck");
    }

    // ---- Debian 12: QEMU 10 from bookworm-backports ---------------------------------------------

    /**
     * A Debian 12 host with everything qvm needs and Debian's QEMU 7.2; root when {@code root}.
     * Its apt-get logs its arguments and, on {@code install}, turns both QEMUs into 10.0.2 (unless
     * told to fail, {@code APT_FAILS}); its apt sources name {@code http://mirror.example/debian}.
     */
    private StubHost debian12(boolean root) throws Exception {
        StubHost h = linuxWithJava11();
        h.jdk(h.root.resolve("usr/lib/jvm/java-17-openjdk-amd64"), "17.0.15", "");
        h.qemu(h.bin.resolve("qemu-system-x86_64"), "7.2.22");
        h.qemu(h.bin.resolve("qemu-system-aarch64"), "7.2.22");
        h.stub("id", root ? "echo 0" : "echo 1000");
        h.stub("getent", "exit 0");
        h.stub("apt-get", "printf 'apt-get %s\\n' \"$*\" >> '" + h.log + "'\n"
                + "[ -z \"$APT_FAILS\" ] || exit 100\n"
                + "case \"$*\" in *install*) for q in '" + h.bin.resolve("qemu-system-x86_64") + "' '"
                + h.bin.resolve("qemu-system-aarch64") + "'; do "
                + "printf '#!/bin/sh\\necho \"QEMU emulator version 10.0.2 (Debian)\"\\n' > \"$q\"; done ;; esac");
        Files.createDirectories(h.root.resolve("etc/apt/sources.list.d"));
        Files.writeString(h.root.resolve("etc/os-release"), "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
                + "VERSION_CODENAME=bookworm\nID=debian\n");
        Files.writeString(h.root.resolve("etc/apt/sources.list.d/debian.sources"), "Types: deb\n"
                + "# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
                + "URIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"
                + "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
                + "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
                + "Components: main\n");
        return h;
    }

    private static Path backportsSources(StubHost h) {
        return h.root.resolve("etc/apt/sources.list.d/qvm-bookworm-backports.sources");
    }

    @Test
    void asRootOnDebian12QemuComesFromBookwormBackportsOnTheHostsOwnMirror() throws Exception {
        StubHost h = debian12(true);
        StubHost.Result r = h.run("scripts/prereqs.sh").expect(0);
        assertEquals("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm-backports\nComponents: main\n"
                + "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n", Files.readString(backportsSources(h)));
        assertTrue(h.calls().contains("apt-get install -y -qq --no-install-recommends -t bookworm-backports "
                + "qemu-system-x86 qemu-system-arm"), h.calls().toString());
        r.stderrHas("installed: QEMU emulator version 10.0.2", "QEMU: " + h.bin.resolve("qemu-system-x86_64")
                + " (QEMU emulator version 10.0.2");
    }

    @Test
    void aSourceThatAlreadyServesBookwormBackportsIsUsedAsItIs() throws Exception {
        StubHost h = debian12(true);
        Files.writeString(h.root.resolve("etc/apt/sources.list"),
                "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://other.example/debian "
                        + "bookworm-backports main\n");
        h.run("scripts/prereqs.sh").expect(0).stderrHas("installed: QEMU emulator version 10.0.2");
        assertFalse(Files.exists(backportsSources(h)), "no second source for the same suite");
    }

    @Test
    void whenAptCannotInstallItQvmGoesOnWithQemu72AndSaysWhatThatCosts() throws Exception {
        StubHost h = debian12(true).env("APT_FAILS", "1");
        h.run("scripts/prereqs.sh").expect(0).stderrHas("could not install QEMU from bookworm-backports",
                "goes on with QEMU emulator version 7.2.22", "full-state clones, single-threaded TCG");
    }

    @Test
    void notAsRootItNamesTheCommandAndInstallsNothing() throws Exception {
        StubHost h = debian12(false);
        h.run("scripts/prereqs.sh").expect(0).stderrHas(
                "sudo apt-get install -y -t bookworm-backports qemu-system-x86 qemu-system-arm");
        assertTrue(h.calls().isEmpty(), h.calls().toString());
        assertFalse(Files.exists(backportsSources(h)));
    }

    @Test
    void qemuIsLeftAloneWhenTheUserSaysSoOrChoseOne() throws Exception {
        StubHost h = debian12(true).env("QVM_QEMU_BACKPORTS", "0");
        h.run("scripts/prereqs.sh").expect(0);
        assertTrue(h.calls().isEmpty(), "QVM_QEMU_BACKPORTS=0: " + h.calls());

        h.env("QVM_QEMU_BACKPORTS", "1").env("QVM_QEMU", h.bin.toString());
        h.run("scripts/prereqs.sh").expect(0);
        assertTrue(h.calls().isEmpty(), "a QVM_QEMU the user chose: " + h.calls());
    }

    @Test
    void qemuIsLeftAloneOffDebian12() throws Exception {
        StubHost trixie = debian12(true);
        Files.writeString(trixie.root.resolve("etc/os-release"), "VERSION_CODENAME=trixie\nID=debian\n");
        trixie.run("scripts/prereqs.sh").expect(0);
        assertTrue(trixie.calls().isEmpty(), "Debian 13: " + trixie.calls());
    }

    @Test
    void qemu10IsLeftAlone() throws Exception {
        StubHost h = debian12(true);
        h.qemu(h.bin.resolve("qemu-system-x86_64"), "10.0.2");
        h.run("scripts/prereqs.sh").expect(0);
        assertTrue(h.calls().isEmpty(), h.calls().toString());
    }

    @Test
    void anUnknownOptionIsRefusedWithTheUsage() throws Exception {
        StubHost h = linuxWithJava11();
        h.run("scripts/prereqs.sh", "--bogus").expect(2).stderrHas("unknown option '--bogus'", "usage:");
    }
}
