package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code qvm image build|verify|info} through the SPI with a fake provider, and {@code qvm doctor --quick}. */
@Tag("unit")
class ImageAndDoctorCommandsTest {

    @TempDir
    Path tmp;

    @Test
    void buildVerifyInfoThroughTheImageTool() throws Exception {
        Path images = tmp.resolve("images");
        CliContext ctx = CliRun.context(tmp.resolve("state"), images, new FakeImageTool());

        CliRun.Result build = CliRun.run(ctx, "image", "build", "--arch", "aarch64", "--json");
        assertEquals(0, build.exit(), build.toString());
        assertTrue(build.err().contains("[qvm] building the fake aarch64 image"), build.err());
        JsonNode j = build.json();
        assertEquals("qvm.image/1", j.path("schema").asText());
        assertEquals("build", j.path("action").asText());
        assertEquals("fake", j.path("tool").asText());
        assertEquals("aarch64", j.path("arch").asText());
        assertEquals(images.resolve("aarch64").toAbsolutePath().toString(), j.path("dir").asText());
        assertTrue(j.path("ok").asBoolean());
        assertEquals(0, j.path("problems").size());
        assertEquals("6.1.0-fake", j.path("kernelVersion").asText());
        assertEquals(3, j.path("files").size());
        assertEquals(Set.of("name", "size", "sha256"), Set.copyOf(List.of(fieldNames(j.path("files").get(0)))));
        assertEquals(42, j.path("buildMillis").asLong());
        assertEquals("aarch64", j.path("manifest").path("arch").asText());

        CliRun.Result info = CliRun.run(ctx, "image", "info", "--arch", "aarch64");
        assertEquals(0, info.exit(), info.toString());
        assertTrue(info.out().contains("(verified)") && info.out().contains("vmlinuz"), info.out());

        Files.writeString(images.resolve("aarch64/initramfs.cpio.gz"), "tampered");
        CliRun.Result verify = CliRun.run(ctx, "image", "verify", "--arch", "aarch64", "--json");
        assertEquals(8, verify.exit(), verify.toString());
        assertFalse(verify.json().path("ok").asBoolean());
        assertTrue(verify.json().path("problems").get(0).asText().startsWith("initramfs.cpio.gz: sha256"));

        CliRun.Result missing = CliRun.run(ctx, "image", "verify", "--arch", "x86_64", "--out", tmp.resolve("none").toString());
        assertEquals(8, missing.exit(), missing.toString());
        assertTrue(missing.out().contains("no image at"), missing.out());
    }

    @Test
    @Tag("qemu")
    void doctorReportsEveryPartAndItsVerdict() {
        CliContext ctx = CliRun.context(tmp.resolve("state"), tmp.resolve("no-images"), FakeImageTool.NO_BUILDS);
        CliRun.Result r = CliRun.run(ctx, "doctor", "--quick", "--json");
        JsonNode j = r.json();
        assertEquals("qvm.doctor/1", j.path("schema").asText());
        // no image here: the host may be fine (8) or not (3), never 0
        assertTrue(r.exit() == 8 || r.exit() == 3, r.toString());
        assertFalse(j.path("ok").asBoolean());
        assertTrue(j.path("host").path("arch").isTextual());
        assertEquals(2, j.path("qemu").size());
        assertFalse(j.path("image").path("verified").asBoolean());
        assertTrue(j.path("image").path("fix").asText().contains("./qvm image build"));
        assertTrue(j.path("stateDirectory").path("writable").asBoolean());
        assertTrue(j.path("vsock").has("usable"));
        assertTrue(j.path("problems").size() >= 1);
        if (r.exit() == 8) {
            assertEquals(4, j.path("accelerators").size());
            JsonNode tcg = j.path("accelerators").get(3);
            assertEquals("tcg", tcg.path("name").asText());
            assertEquals(List.of("compiled-in", "host-support", "functional"),
                    List.of(tcg.path("layers").get(0).path("layer").asText(), tcg.path("layers").get(1).path("layer").asText(),
                            tcg.path("layers").get(2).path("layer").asText()));
            assertEquals("skipped", tcg.path("layers").get(2).path("status").asText());
            assertTrue(j.path("autoChoice").isTextual());
        }

        CliRun.Result text = CliRun.run(ctx, "doctor", "--quick");
        assertEquals(r.exit(), text.exit());
        assertTrue(text.out().contains("image    ") && text.out().contains("fix: ./qvm image build"), text.out());
    }

    private static String[] fieldNames(JsonNode n) {
        List<String> out = new java.util.ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        return out.toArray(new String[0]);
    }
}
