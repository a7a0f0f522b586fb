package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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

        Files.writeString(images.resolve("aarch64/initramfs.cpio.lz4"), "tampered");
        CliRun.Result verify = CliRun.run(ctx, "image", "verify", "--arch", "aarch64", "--json");
        assertEquals(8, verify.exit(), verify.toString());
        assertFalse(verify.json().path("ok").asBoolean());
        assertTrue(verify.json().path("problems").get(0).asText().startsWith("initramfs.cpio.lz4: sha256"));

        CliRun.Result missing = CliRun.run(ctx, "image", "verify", "--arch", "x86_64", "--out", tmp.resolve("none").toString());
        assertEquals(8, missing.exit(), missing.toString());
        assertTrue(missing.out().contains("no image at"), missing.out());
    }

    @Test
    @Tag("qemu")
    void doctorReportsEveryPartAndItsVerdict() {
        // a host set up for qvm: as root, QEMU has an unprivileged user to drop to (nobody, here)
        CliContext ctx = withQemuUser(CliRun.context(tmp.resolve("state"), tmp.resolve("no-images"),
                FakeImageTool.NO_BUILDS), "nobody");
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

        Map<String, JsonNode> confinement = new java.util.LinkedHashMap<>();
        j.path("confinement").forEach(c -> confinement.put(c.path("name").asText(), c));
        assertEquals(List.of("seccomp", "unprivileged", "cgroup", "tb-size", "environment", "ptrace"),
                List.copyOf(confinement.keySet()));
        confinement.values().forEach(c -> assertTrue(Set.of("active", "inactive", "not-needed")
                .contains(c.path("status").asText()), c.toString()));
        assertEquals("active", confinement.get("environment").path("status").asText());
        assertEquals("active", confinement.get("unprivileged").path("status").asText(), confinement.toString());
        if (System.getProperty("os.name").startsWith("Linux")) {
            assertEquals("active", confinement.get("seccomp").path("status").asText());
        }
        if ("tcg".equals(j.path("autoChoice").asText(null))) {
            assertEquals("active", confinement.get("tb-size").path("status").asText());
        }

        CliRun.Result text = CliRun.run(ctx, "doctor", "--quick");
        assertEquals(r.exit(), text.exit());
        assertTrue(text.out().contains("image    ") && text.out().contains("fix: build the guest image: ./qvm image build"), text.out());
        assertTrue(text.out().contains("confine  cgroup"), text.out());
    }

    @Test
    @Tag("qemu")
    @Tag("security")
    void doctorAsRootWithoutAUserForQemuSaysTheHostCannotRunSandboxesAndTheFix() {
        CliContext ctx = withQemuUser(CliRun.context(tmp.resolve("state"), tmp.resolve("no-images"),
                FakeImageTool.NO_BUILDS), "qvm-no-such-user");
        CliRun.Result r = CliRun.run(ctx, "doctor", "--quick", "--json");
        JsonNode unprivileged = null;
        for (JsonNode c : r.json().path("confinement")) {
            if (c.path("name").asText().equals("unprivileged")) {
                unprivileged = c;
            }
        }
        if (io.qvm.internal.host.Posix.currentUid() != 0) {
            assertEquals("active", unprivileged.path("status").asText(), unprivileged.toString());
            return; // QEMU runs as this unprivileged user: nothing to set up
        }
        assertEquals(3, r.exit(), r.toString());
        assertEquals("inactive", unprivileged.path("status").asText());
        boolean fix = false;
        for (JsonNode p : r.json().path("problems")) {
            fix |= p.path("fix").asText().equals("useradd --system --no-create-home --shell /usr/sbin/nologin "
                    + "qvm-no-such-user");
        }
        assertTrue(fix, r.toString());
    }

    private static CliContext withQemuUser(CliContext ctx, String user) {
        Map<String, String> env = new java.util.HashMap<>(ctx.env());
        env.put("QVM_QEMU_USER", user);
        return ctx.withEnv(env);
    }

    private static String[] fieldNames(JsonNode n) {
        List<String> out = new java.util.ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        return out.toArray(new String[0]);
    }
}
