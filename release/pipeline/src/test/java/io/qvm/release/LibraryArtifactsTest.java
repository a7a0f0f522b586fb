package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.eclipse.aether.artifact.Artifact;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a release publishes of a checkout: the jars the BOM manages, found through the parent's
 * modules, with their POMs, sources and javadoc; and the checkout this project is, whose BOM
 * names only modules that exist or are being added.
 */
@Tag("unit")
class LibraryArtifactsTest {

    @TempDir
    Path tmp;

    @Test
    void theParentTheBomAndPerManagedJarItsPomAndThreeJars() throws Exception {
        Path root = Reactors.write(tmp.resolve("r"), "1.0.0");
        LibraryArtifacts libs = LibraryArtifacts.fromReactor(root, "1.0.0");
        assertEquals(List.of("io.qvm:qvm-parent:pom:1.0.0", "io.qvm:qvm-bom:pom:1.0.0",
                "io.qvm:qvm-protocol:pom:1.0.0", "io.qvm:qvm-protocol:jar:1.0.0", "io.qvm:qvm-protocol:jar:sources:1.0.0",
                "io.qvm:qvm-protocol:jar:javadoc:1.0.0", "io.qvm:qvm-qemu-backend:pom:1.0.0",
                "io.qvm:qvm-qemu-backend:jar:1.0.0", "io.qvm:qvm-qemu-backend:jar:sources:1.0.0",
                "io.qvm:qvm-qemu-backend:jar:javadoc:1.0.0"),
                libs.artifacts().stream().map(Artifact::toString).toList(), "the image zip the BOM names is not one");
        for (Artifact a : libs.artifacts()) {
            assertTrue(Files.isRegularFile(a.getPath()), a + " " + a.getPath());
        }
        assertEquals(root.resolve("qemu-backend/target/qvm-qemu-backend-1.0.0-javadoc.jar"),
                libs.artifacts().get(9).getPath());
    }

    @Test
    void aJarTheBomManagesThatNoModuleBuildsIsRefused() throws Exception {
        Path root = Reactors.write(tmp.resolve("r"), "1.0.0");
        Path bom = root.resolve(LibraryArtifacts.BOM_POM);
        Files.writeString(bom, Files.readString(bom).replace("</dependencies>", "<dependency><groupId>io.qvm</groupId>"
                + "<artifactId>qvm-testing</artifactId><version>1.0.0</version></dependency></dependencies>"));
        ReleaseException e = assertThrows(ReleaseException.class, () -> LibraryArtifacts.fromReactor(root, "1.0.0"));
        assertTrue(e.getMessage().contains(bom + " manages io.qvm:qvm-testing but no module of " + root.resolve("pom.xml")
                + " builds it"), e.getMessage());
    }

    @Test
    void aCheckoutAtAnotherVersionIsRefused() throws Exception {
        Path root = Reactors.write(tmp.resolve("r"), "1.0.0");
        ReleaseException e = assertThrows(ReleaseException.class, () -> LibraryArtifacts.fromReactor(root, "1.1.0"));
        assertTrue(e.getMessage().contains(root.resolve("pom.xml") + " is at version 1.0.0, not 1.1.0"), e.getMessage());
        assertTrue(e.getMessage().contains("no " + root.resolve("protocol/target/qvm-protocol-1.1.0.jar")), e.getMessage());
    }

    /** This project's own BOM and parent agree: every jar the BOM manages is a module, or one being added. */
    @Test
    void thisProjectsBomManagesItsPublishedModules() throws Exception {
        Path root = Path.of("../..").toAbsolutePath().normalize(); // Maven runs this in release/pipeline
        ReleaseException e = assertThrows(ReleaseException.class, () -> LibraryArtifacts.fromReactor(root, "0.0.0-none"));
        for (String a : List.of("qvm-protocol", "qvm-transport", "qvm-qemu-backend", "qvm-renderer-worker",
                "qvm-testing", "qvm-micrometer")) {
            assertTrue(e.getMessage().contains(a + "-0.0.0-none.jar"), a + ": " + e.getMessage());
        }
        for (String a : List.of("qvm-rootfs", "qvm-initramfs-build", "qvm-cli", "qvm-harness", "qvm-release")) {
            assertTrue(!e.getMessage().contains(a), "the image's build, the CLI and its harnesses are not published: "
                    + e.getMessage());
        }
    }
}
