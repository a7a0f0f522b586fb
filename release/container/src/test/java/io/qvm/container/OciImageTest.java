package io.qvm.container;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

@Tag("unit")
class OciImageTest {
    private static final Instant EPOCH = ContainerImage.DEFAULT_EPOCH;

    @TempDir
    Path tmp;

    private OciImage.Written build(String name) throws IOException {
        Path cli = tmp.resolve(name + "-cli");
        Files.createDirectories(cli.resolve("lib"));
        Files.writeString(cli.resolve("qvm.jar"), "not really a jar");
        Files.writeString(cli.resolve("lib/b.jar"), "b");
        Files.writeString(cli.resolve("lib/a.jar"), "a");
        Path image = tmp.resolve(name + "-image");
        Files.createDirectories(image);
        for (String f : List.of("vmlinuz", "initramfs.cpio.lz4", "manifest.json", "SHA256SUMS")) {
            Files.writeString(image.resolve(f), f);
        }
        Layer l = new Layer();
        ContainerImage.addQvm(l, cli, image);
        return OciImage.write(l, ContainerImage.runConfig(Map.of("b", "2", "a", "1")), "qvm:test", EPOCH,
                tmp.resolve(name));
    }

    @Test
    void twoBuildsGiveTheSameBytes() throws IOException {
        OciImage.Written a = build("one");
        OciImage.Written b = build("two");
        assertEquals(a.manifest(), b.manifest());
        assertEquals(a.layer(), b.layer());
        assertArrayEquals(Files.readAllBytes(a.archive()), Files.readAllBytes(b.archive()));
        assertArrayEquals(Files.readAllBytes(a.layout().resolve("index.json")),
                Files.readAllBytes(b.layout().resolve("index.json")));
    }

    @Test
    void blobsAreNamedByTheirDigestAndTheLayerGzipHeaderIsFixed() throws IOException {
        OciImage.Written w = build("one");
        for (OciImage.Blob blob : List.of(w.manifest(), w.config(), w.layer())) {
            Path f = w.layout().resolve("blobs/sha256").resolve(blob.digest().substring(7));
            assertEquals(blob.size(), Files.size(f));
            assertEquals(blob.digest().substring(7), OciImage.hex(f));
        }
        byte[] gz = Files.readAllBytes(w.layout().resolve("blobs/sha256").resolve(w.layer().digest().substring(7)));
        // magic, deflate, flags 0 (no name, no comment), mtime 0, xfl, OS 3 (Unix)
        assertEquals("1f8b080000000000", HexFormat.of().formatHex(gz, 0, 8));
        assertEquals(3, gz[9]);
        JsonNode index = new ObjectMapper().readTree(w.layout().resolve("index.json").toFile());
        assertEquals(w.manifest().digest(), index.path("manifests").path(0).path("digest").asText());
        assertEquals("qvm:test", index.path("manifests").path(0).path("annotations")
                .path("org.opencontainers.image.ref.name").asText());
    }

    @Test
    void configRunsServeAsQvmWithTokensAndTheQvmEnvironment() throws IOException {
        byte[] json = OciImage.configJson(ContainerImage.runConfig(Map.of("z", "26", "a", "1")),
                "sha256:" + "0".repeat(64), EPOCH);
        JsonNode c = new ObjectMapper().readTree(json);
        assertEquals("2026-01-01T00:00:00Z", c.path("created").asText());
        assertEquals("amd64", c.path("architecture").asText());
        JsonNode cfg = c.path("config");
        assertEquals("10001:10001", cfg.path("User").asText());
        assertEquals("[\"/usr/lib/jvm/java-17-openjdk-amd64/bin/java\",\"-jar\",\"/opt/qvm/qvm.jar\",\"serve\"]",
                cfg.path("Entrypoint").toString());
        assertEquals("[\"--tokens\",\"/etc/qvm/tenants.txt\",\"--listen\",\"0.0.0.0:8080\"]", cfg.path("Cmd").toString());
        String env = cfg.path("Env").toString();
        for (String v : List.of("QVM_IMAGE_DIR=/opt/qvm/image", "QVM_STATE=/var/lib/qvm/state",
                "QVM_CACHE=/var/lib/qvm/cache", "QVM_RUNTIME_DIR=/var/lib/qvm/run", "HOME=/var/lib/qvm")) {
            assertTrue(env.contains("\"" + v + "\""), env);
        }
        assertTrue(cfg.path("ExposedPorts").has("8080/tcp"));
        assertEquals("{\"a\":\"1\",\"z\":\"26\"}", cfg.path("Labels").toString(), "labels sorted");
        assertEquals("sha256:" + "0".repeat(64), c.path("rootfs").path("diff_ids").path(0).asText());
        assertArrayEquals(json, OciImage.configJson(ContainerImage.runConfig(Map.of("a", "1", "z", "26")),
                "sha256:" + "0".repeat(64), EPOCH));
    }

    @Test
    void theLayerHasQvmsUserAndDirectories() throws IOException {
        OciImage.Written w = build("one");
        String passwd = "qvm:x:10001:10001:qvm serve:/var/lib/qvm:/usr/sbin/nologin";
        Layer l = new Layer();
        ContainerImage.addQvm(l, tmp.resolve("one-cli"), tmp.resolve("one-image"));
        assertTrue(l.paths().containsAll(List.of("etc/passwd", "etc/group", "etc/qvm", "tmp", "var/lib/qvm",
                "opt/qvm/qvm.jar", "opt/qvm/lib/a.jar", "opt/qvm/lib/b.jar", "opt/qvm/image/x86_64/vmlinuz")));
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        l.writeTar(out, EPOCH.getEpochSecond());
        assertTrue(out.toString(StandardCharsets.ISO_8859_1).contains(passwd));
        assertTrue(w.layer().size() > 0);
    }
}
