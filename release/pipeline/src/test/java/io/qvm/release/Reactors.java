package io.qvm.release;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A built checkout as {@link LibraryArtifacts} reads it, written into a directory: the parent
 * POM with its modules, the BOM (managing {@link #LIBRARIES} and an image
 * zip, which is not a library's), and per library its POM and the jar, sources and javadoc jar
 * in {@code target/}, each with content naming itself so that a mix-up shows.
 */
public final class Reactors {

    public static final List<String> LIBRARIES = List.of("qvm-protocol", "qvm-qemu-backend");

    private Reactors() {
    }

    /** The reactor of {@code version} at {@code root}; {@code builtAs} is the version the jars' names carry. */
    public static Path write(Path root, String version, String builtAs) throws IOException {
        Files.createDirectories(root);
        StringBuilder modules = new StringBuilder();
        StringBuilder managed = new StringBuilder();
        for (String a : LIBRARIES) {
            String dir = a.substring("qvm-".length());
            modules.append("<module>").append(dir).append("</module>");
            managed.append(dependency(a, ""));
            Path module = Files.createDirectories(root.resolve(dir));
            Files.writeString(module.resolve("pom.xml"), """
                    <project><modelVersion>4.0.0</modelVersion>
                      <parent><groupId>io.qvm</groupId><artifactId>qvm-parent</artifactId><version>%s</version></parent>
                      <artifactId>%s</artifactId>
                    </project>
                    """.formatted(version, a));
            Path target = Files.createDirectories(module.resolve("target"));
            for (String c : List.of("", "-sources", "-javadoc")) {
                String name = a + "-" + builtAs + c + ".jar";
                Files.writeString(target.resolve(name), "the jar " + name, StandardCharsets.UTF_8);
            }
        }
        modules.append("<module>release/bom</module>");
        managed.append("""
                <dependency><groupId>io.qvm</groupId><artifactId>qvm-image</artifactId><version>%s</version>
                  <type>zip</type><classifier>x86_64</classifier></dependency>
                """.formatted(version));
        Files.writeString(root.resolve("pom.xml"), """
                <project><modelVersion>4.0.0</modelVersion>
                  <groupId>io.qvm</groupId><artifactId>qvm-parent</artifactId><version>%s</version>
                  <packaging>pom</packaging><modules>%s</modules>
                </project>
                """.formatted(version, modules));
        Path bom = Files.createDirectories(root.resolve("release/bom"));
        Files.writeString(bom.resolve("pom.xml"), """
                <project><modelVersion>4.0.0</modelVersion>
                  <groupId>io.qvm</groupId><artifactId>qvm-bom</artifactId><version>%s</version>
                  <packaging>pom</packaging>
                  <dependencyManagement><dependencies>%s</dependencies></dependencyManagement>
                </project>
                """.formatted(version, managed));
        return root;
    }

    public static Path write(Path root, String version) throws IOException {
        return write(root, version, version);
    }

    private static String dependency(String artifactId, String extra) {
        return "<dependency><groupId>io.qvm</groupId><artifactId>" + artifactId
                + "</artifactId><version>${project.version}</version>" + extra + "</dependency>";
    }
}
