package io.qvm.internal.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Finding the local Maven repository as Maven does: the property, the variable, settings.xml, the default. */
@Tag("unit")
class LocalMavenRepositoryTest {

    @TempDir
    Path home;

    private Path settings;

    @BeforeEach
    void m2() throws IOException {
        settings = Files.createDirectories(home.resolve(".m2")).resolve("settings.xml");
    }

    private LocalMavenRepository locate(Optional<String> property, Map<String, String> env) {
        return LocalMavenRepository.locate(property, QvmEnvironment.of(env, home.toString(), "Linux"));
    }

    @Test
    void thePropertyThenQvmMavenRepoThenSettingsThenTheDefault() throws IOException {
        Files.writeString(settings, "<settings><localRepository>/from/settings</localRepository></settings>");
        Map<String, String> env = Map.of("QVM_MAVEN_REPO", "/from/env");
        assertEquals(new LocalMavenRepository(Path.of("/from/property"), "-Dmaven.repo.local"),
                locate(Optional.of("/from/property"), env));
        assertEquals(new LocalMavenRepository(Path.of("/from/env"), "$QVM_MAVEN_REPO"), locate(Optional.empty(), env));
        assertEquals(new LocalMavenRepository(Path.of("/from/settings"), "<localRepository> of " + settings),
                locate(Optional.of(" "), Map.of("QVM_MAVEN_REPO", "")), "blank counts as unset");
        Files.delete(settings);
        assertEquals(new LocalMavenRepository(home.resolve(".m2/repository"), "the default"),
                locate(Optional.empty(), Map.of()));
    }

    @Test
    void settingsInMavensNamespaceWithExpressionsAsMavenExpandsThem() throws IOException {
        Files.writeString(settings, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                + "<settings xmlns=\"http://maven.apache.org/SETTINGS/1.2.0\">\n"
                + "  <!-- <localRepository>/commented/out</localRepository> -->\n"
                + "  <mirrors><mirror><localRepository>/nested/is/not/it</localRepository></mirror></mirrors>\n"
                + "  <localRepository>\n    ${user.home}/repos/${env.TEAM}/m2\n  </localRepository>\n"
                + "</settings>\n");
        assertEquals(home.resolve("repos/render/m2"), locate(Optional.empty(), Map.of("TEAM", "render")).root());
        Files.writeString(settings, "<settings><localRepository>/away/${env.NOPE}/x</localRepository></settings>");
        assertEquals(Path.of("/away/${env.NOPE}/x"), locate(Optional.empty(), Map.of()).root(),
                "an unknown variable stays as written, as Maven leaves it");
        Files.writeString(settings, "<settings><offline>true</offline></settings>");
        assertEquals(new LocalMavenRepository(home.resolve(".m2/repository"), "the default"),
                locate(Optional.empty(), Map.of()));
    }

    @Test
    void aSettingsFileWithEntitiesIsNotReadAndTheDefaultSaysWhy() throws IOException {
        Path secret = Files.writeString(home.resolve("secret"), "/stolen/path");
        Files.writeString(settings, "<?xml version=\"1.0\"?>\n<!DOCTYPE settings [<!ENTITY x SYSTEM \""
                + secret.toUri() + "\">]>\n<settings><localRepository>&x;</localRepository></settings>");
        LocalMavenRepository r = locate(Optional.empty(), Map.of());
        assertEquals(home.resolve(".m2/repository"), r.root());
        assertTrue(r.how().startsWith("the default, as " + settings + " cannot be read: not well-formed XML: "), r.how());
        assertFalse(r.toString().contains("stolen"));

        Files.writeString(settings, "<settings><localRepository>/x</settings>");
        assertTrue(locate(Optional.empty(), Map.of()).how().contains("not well-formed XML"));
    }

    @Test
    void anArtifactsPathIsMavensLayout() {
        LocalMavenRepository r = new LocalMavenRepository(Path.of("/r"), "t");
        assertEquals(Path.of("/r/io/qvm/qvm-image/0.1.0-SNAPSHOT/qvm-image-0.1.0-SNAPSHOT-aarch64.zip"),
                ImageArtifact.zip(r, "0.1.0-SNAPSHOT", Arch.AARCH64));
        assertEquals(Path.of("/r/org/example/lib/2/lib-2.jar"), r.artifact("org.example", "lib", "2", null, "jar"));
        assertEquals("io.qvm:qvm-image:0.1.0-SNAPSHOT:zip:x86_64", ImageArtifact.coordinates("0.1.0-SNAPSHOT", Arch.X86_64));
    }
}
