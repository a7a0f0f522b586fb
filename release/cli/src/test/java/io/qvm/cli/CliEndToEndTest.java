package io.qvm.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole CLI against a real sandbox: {@code up --detach} → {@code ps} → {@code render} →
 * {@code logs} → {@code down}, and afterwards nothing is left: no QEMU, no supervisor, no state.
 * Boots real QEMU with the real image ({@code $QVM_IMAGE_DIR} or {@code out/image}); under TCG on
 * a 2-core machine that takes tens of seconds, so every wait is generous and none is asserted.
 */
@Tag("e2e")
@Tag("qemu")
class CliEndToEndTest {

    /** The renderer-worker corpus's shapes.svg, scaled to 64 x 48. */
    static final String SVG = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"64\" height=\"48\">\n"
            + "  <rect x=\"0\" y=\"0\" width=\"32\" height=\"48\" fill=\"#ff0000\"/>\n"
            + "  <path d=\"M 10 40 L 54 8\" stroke=\"#00ff00\" stroke-width=\"4\"/>\n</svg>\n";

    @TempDir
    Path tmp;

    CliContext ctx;
    final List<Long> pids = new ArrayList<>();

    @AfterEach
    void leaveNothingRunning() {
        if (ctx != null) {
            CliRun.run(ctx, "down", "--all");
        }
        pids.forEach(p -> ProcessHandle.of(p).ifPresent(ProcessHandle::destroyForcibly));
    }

    @Test
    void upPsRenderLogsDown() throws IOException {
        Path imageRoot = CliContext.system().imageRoot(null);
        boolean present = Files.isDirectory(imageRoot.resolve("x86_64"));
        if (!present) {
            System.out.println("CliEndToEndTest skipped: no guest image at " + imageRoot.resolve("x86_64")
                    + " (./qvm test builds it first: ./qvm image build)");
        }
        Assumptions.assumeTrue(present, "no guest image at " + imageRoot.resolve("x86_64") + "; run ./qvm image build");
        Path state = tmp.resolve("state");
        java.util.Map<String, String> env = new java.util.HashMap<>(CliRun.context(state, imageRoot, FakeImageTool.NO_BUILDS).env());
        env.put("QVM_CACHE", tmp.resolve("cache").toString()); // probe verdicts of this run stay in this run
        // An empty cache: the class archive would be made here only to add its time to this walk
        // (SandboxLifecycleE2ETest proves it).
        env.put("QVM_CLASS_ARCHIVES", "off");
        ctx = CliRun.context(state, imageRoot, FakeImageTool.NO_BUILDS).withEnv(env);

        // up --detach: a supervisor boots the sandbox and stays; we get its id
        // --reuse: this walk checks one sandbox's QEMU pid, console and stop; UpSessionTest covers the
        // default (a fresh sandbox per render) against the fake QEMU
        CliRun.Result up = CliRun.run(ctx, "up", "--detach", "--reuse", "--json", "--boot-timeout", "900", "--wait",
                "1200");
        assertEquals(0, up.exit(), up.toString());
        JsonNode u = up.json();
        String id = u.path("id").asText();
        long supervisorPid = u.path("supervisorPid").asLong();
        long qemuPid = u.path("qemuPid").asLong();
        pids.add(supervisorPid);
        pids.add(qemuPid);
        assertEquals("qvm.up/1", u.path("schema").asText());
        assertTrue(u.path("detached").asBoolean());
        assertTrue(u.path("bootMillis").has("worker-ready"), u.toString());
        assertTrue(up.err().contains("[qvm] "), "progress lines from the supervisor's log:\n" + up.err());
        assertTrue(ProcessHandle.of(supervisorPid).map(ProcessHandle::isAlive).orElse(false));
        assertFalse(Files.exists(state.resolve("launch").resolve(id)));

        // ps
        JsonNode ps = CliRun.run(ctx, "ps", "--json").json();
        JsonNode row = ps.path("sandboxes").get(0);
        assertEquals(id, row.path("id").asText());
        assertEquals("running", row.path("state").asText());
        assertEquals(qemuPid, row.path("qemuPid").asLong());
        assertEquals("supervisor", row.path("owner").path("kind").asText());

        // render through the control socket, twice (the sandbox stays up between requests)
        Path svg = tmp.resolve("in.svg");
        Files.writeString(svg, SVG);
        CliRun.Result r = CliRun.run(ctx, "render", svg.toString(), "--id", id, "--json", "-o", tmp.resolve("a.png").toString());
        assertEquals(0, r.exit(), r.toString());
        assertEquals(64, r.json().path("width").asInt());
        assertEquals(48, r.json().path("height").asInt());
        assertEquals("reused", r.json().path("sandbox").path("mode").asText());
        assertEquals(id, r.json().path("sandbox").path("id").asText());
        byte[] png = Files.readAllBytes(tmp.resolve("a.png"));
        assertEquals(0x89, png[0] & 0xff);
        CliRun.Result r2 = CliRun.run(ctx, "render", svg.toString(), "--width", "128", "-o", tmp.resolve("b.png").toString());
        assertEquals(0, r2.exit(), r2.toString());
        assertTrue(r2.out().contains("128 x 96 px"), r2.out());

        // a broken document: typed failure, exit 5, and the sandbox still serves
        Path bad = tmp.resolve("bad.svg");
        Files.writeString(bad, "<svg");
        CliRun.Result fail = CliRun.run(ctx, "render", bad.toString(), "--json");
        assertEquals(5, fail.exit(), fail.toString());
        assertEquals("RENDER_FAILED", fail.json().path("exitName").asText());

        // logs
        CliRun.Result console = CliRun.run(ctx, "logs", id);
        assertEquals(0, console.exit(), console.toString());
        // a clone of the template: its console starts at the restore, with the worker's own lines
        assertTrue(console.out().contains("worker: "), console.out());
        CliRun.Result sup = CliRun.run(ctx, "logs", id, "--supervisor", "--tail", "50", "--json");
        assertEquals(0, sup.exit(), sup.toString());
        assertTrue(sup.json().path("lines").toString().contains("render"), sup.out());
        assertEquals(0, CliRun.run(ctx, "logs", id, "--stderr").exit());

        // down: graceful through the supervisor
        CliRun.Result down = CliRun.run(ctx, "down", id, "--json");
        assertEquals(0, down.exit(), down.toString());
        assertEquals("stopped", down.json().path("sandboxes").get(0).path("outcome").asText());

        // nothing left: no QEMU, no supervisor, no state
        await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(500)).until(() ->
                !alive(qemuPid) && !alive(supervisorPid));
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(id)));
        assertEquals(0, CliRun.run(ctx, "ps", "--json").json().path("sandboxes").size());
        assertTrue(isEmptyOrAbsent(state.resolve("launch")));
        assertFalse(Files.exists(io.qvm.internal.process.SocketPaths.forSandbox(id).dir()));
    }

    private static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    private static boolean isEmptyOrAbsent(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return true;
        }
        try (Stream<Path> s = Files.list(dir)) {
            Optional<Path> any = s.findAny();
            return any.isEmpty();
        }
    }
}
