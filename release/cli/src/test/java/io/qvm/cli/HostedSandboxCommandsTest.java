package io.qvm.cli;

import io.qvm.protocol.ErrorCode;
import io.qvm.RenderFailedException;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.SandboxLostException;
import io.qvm.internal.process.SandboxState;
import io.qvm.internal.process.SocketPaths;
import io.qvm.internal.process.StateDirectory;
import io.qvm.cli.control.ControlServer;
import io.qvm.cli.control.ReadyFile;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ps, render, logs and down against a sandbox hosted the way {@code qvm up} hosts one — a state
 * directory with owner.json and ready.json, and a real {@link ControlServer} on a real AF_UNIX
 * socket — whose target is scripted instead of a VM. The owner and "QEMU" are this JVM.
 */
@Tag("unit")
class HostedSandboxCommandsTest {

    @TempDir
    Path tmp;

    Path sockDir;
    CliContext ctx;
    SandboxState state;
    ControlServer server;
    FakeTargets.Scripted target;

    @BeforeEach
    void host() throws IOException {
        ctx = CliRun.context(tmp.resolve("state"), tmp.resolve("images"), FakeImageTool.NO_BUILDS);
        StateDirectory states = StateDirectory.at(tmp.resolve("state"));
        String id = StateDirectory.newSandboxId();
        sockDir = Files.createTempDirectory(Path.of("/tmp"), "qvmcli");
        state = states.create(id, "qemu-system-x86_64", null);
        state.recordQemu(ProcessHandle.current());
        Files.writeString(state.consoleLog(), "qvm: phase=init uptime=0.50\nhostile \u001b[2J escape\nlast line\n");
        target = new FakeTargets.Scripted();
        target.onStop = () -> {
            try {
                state.delete();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        };
        Path ctl = sockDir.resolve("ctl.sock");
        server = ControlServer.start(ctl, target, FrameLimits.ofBody(1 << 20), l -> { });
        new ReadyFile(ReadyFile.FORMAT, id, ProcessHandle.current().pid(), null, true, ctl.toString(),
                ProcessHandle.current().pid(), "tcg", "microvm", "serial",
                Map.of("process-start", 0L, "worker-ready", 1234L), List.of(), Instant.now().toString(), null,
                1 << 20, 64 << 20, 60_000, null, null, null, null).writeTo(state.dir());
    }

    @AfterEach
    void tearDown() throws IOException {
        server.close();
        FileTrees.deleteQuietly(sockDir);
    }

    @Test
    void psShowsTheRunningSandbox() {
        CliRun.Result r = CliRun.run(ctx, "ps");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().contains(state.id()) && r.out().contains("running") && r.out().contains("tcg"), r.out());

        JsonNode row = CliRun.run(ctx, "ps", "--json").json().path("sandboxes").get(0);
        assertEquals(state.id(), row.path("id").asText());
        assertEquals("running", row.path("state").asText());
        assertEquals(ProcessHandle.current().pid(), row.path("qemuPid").asLong());
        assertEquals("tcg", row.path("accelerator").asText());
        assertTrue(row.path("uptimeSeconds").isIntegralNumber());
        assertEquals(ProcessHandle.current().pid(), row.path("owner").path("pid").asLong());
        assertTrue(row.path("owner").path("alive").asBoolean());
        assertEquals("supervisor", row.path("owner").path("kind").asText());
        assertEquals(sockDir.resolve("ctl.sock").toString(), row.path("controlSocket").asText());
    }

    @Test
    void renderGoesThroughTheControlSocket() throws IOException {
        Path doc = tmp.resolve("in.svg");
        Files.writeString(doc, "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>");
        Path out = tmp.resolve("out/x.png");
        CliRun.Result r = CliRun.run(ctx, "render", doc.toString(), "-o", out.toString(), "--width", "40", "--height",
                "30", "--background", "transparent", "--json");
        assertEquals(0, r.exit(), r.toString());
        JsonNode j = r.json();
        assertEquals("qvm.render/1", j.path("schema").asText());
        assertEquals("svg", j.path("type").asText());
        assertEquals(40, j.path("width").asInt());
        assertEquals(30, j.path("height").asInt());
        assertEquals(7, j.path("renderMillis").asLong());
        assertEquals(Files.size(out), j.path("bytes").asLong());
        assertEquals(state.id(), j.path("sandbox").path("id").asText());
        assertFalse(j.path("sandbox").path("fresh").asBoolean());
        assertArrayEquals(FakeTargets.png(40, 30), Files.readAllBytes(out));
        RenderRequest seen = target.received.get(0);
        assertEquals(RenderRequest.TRANSPARENT, seen.backgroundArgb());
        assertArrayEquals(Files.readAllBytes(doc), seen.document());

        CliRun.Result text = CliRun.run(ctx, "render", doc.toString(), "-o", out.toString(), "--id", state.id());
        assertEquals(0, text.exit(), text.toString());
        assertTrue(text.out().contains("10 x 10 px") && text.out().contains(" bytes") && text.out().contains(" ms"),
                text.out());
    }

    @Test
    void pdfTypeIsSniffedAndPageForwarded() throws IOException {
        Path doc = tmp.resolve("in.bin");
        Files.writeString(doc, "%PDF-1.4 not really");
        CliRun.Result r = CliRun.run(ctx, "render", doc.toString(), "--page", "3", "--dpi", "150");
        assertEquals(0, r.exit(), r.toString());
        assertEquals(RenderRequest.Type.PDF, target.received.get(0).type());
        assertEquals(3, target.received.get(0).page());
        assertEquals(150, target.received.get(0).dpi());
        assertTrue(Files.exists(tmp.resolve("in.png")));
    }

    @Test
    void renderFailuresKeepTheirTypeAcrossTheSocket() throws IOException {
        Path doc = tmp.resolve("in.svg");
        Files.writeString(doc, "<svg");
        target.then(q -> {
            throw new RenderFailedException(ErrorCode.PARSE_ERROR, "XML document structures must start and end within the same entity");
        });
        CliRun.Result r = CliRun.run(ctx, "render", doc.toString(), "--json");
        assertEquals(5, r.exit(), r.toString());
        assertEquals("PARSE_ERROR", r.json().path("code").asText());
        assertEquals("RENDER_FAILED", r.json().path("exitName").asText());
        assertTrue(r.err().contains("same entity"), r.err());

        target.then(q -> {
            throw new RenderFailedException(ErrorCode.LIMIT_EXCEEDED, "40000 x 40000 is above maxPixels");
        });
        r = CliRun.run(ctx, "render", doc.toString(), "--json");
        assertEquals(5, r.exit(), r.toString());
        assertEquals("LIMIT_EXCEEDED", r.json().path("code").asText());

        target.then(q -> {
            throw new SandboxLostException(SandboxLostException.Reason.DEADLINE_EXCEEDED, "render overran 60 s");
        });
        r = CliRun.run(ctx, "render", doc.toString(), "--json");
        assertEquals(6, r.exit(), r.toString());
        assertEquals("TIMEOUT", r.json().path("code").asText());
    }

    @Test
    void aDocumentAboveTheSandboxLimitIsRefusedTyped() throws IOException {
        Path doc = tmp.resolve("big.svg");
        Files.write(doc, new byte[(1 << 20) + 1]);
        CliRun.Result r = CliRun.run(ctx, "render", doc.toString(), "--json");
        assertEquals(5, r.exit(), r.toString());
        assertEquals("TOO_LARGE", r.json().path("code").asText());
        assertTrue(target.received.isEmpty());
    }

    @Test
    void renderWithAnUnknownIdIsExitSeven() throws IOException {
        Path doc = tmp.resolve("in.svg");
        Files.writeString(doc, "<svg/>");
        CliRun.Result r = CliRun.run(ctx, "render", doc.toString(), "--id", "zzzzzzzzzzzz");
        assertEquals(7, r.exit(), r.toString());
    }

    @Test
    void logsShowTheConsoleSanitised() {
        CliRun.Result r = CliRun.run(ctx, "logs", state.id());
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().contains("hostile \\x1b[2J escape"), r.out());
        assertFalse(r.out().contains("\u001b"));

        JsonNode j = CliRun.run(ctx, "logs", state.id(), "--tail", "1", "--json").json();
        assertEquals("qvm.logs/1", j.path("schema").asText());
        assertEquals("console", j.path("stream").asText());
        assertEquals(1, j.path("lines").size());
        assertEquals("last line", j.path("lines").get(0).asText());
        assertTrue(j.path("truncated").asBoolean());

        JsonNode e = CliRun.run(ctx, "logs", state.id(), "--stderr", "--json").json();
        assertEquals("stderr", e.path("stream").asText());
        assertEquals(0, e.path("lines").size());

        assertEquals(7, CliRun.run(ctx, "logs", state.id(), "--supervisor").exit());
    }

    @Test
    void downSaysGoodbyeAndTheSandboxIsGone() throws Exception {
        CliRun.Result r = CliRun.run(ctx, "down", state.id(), "--json");
        assertEquals(0, r.exit(), r.toString());
        JsonNode e = r.json().path("sandboxes").get(0);
        assertEquals(state.id(), e.path("id").asText());
        assertEquals("stopped", e.path("outcome").asText());
        assertEquals(1, target.stops.get());
        server.stopRequested().get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertFalse(Files.exists(state.dir()));
        assertEquals(0, CliRun.run(ctx, "ps", "--json").json().path("sandboxes").size());
    }

    @Test
    void aSandboxOwnedByADeadProcessIsStaleAndDownReapsIt() throws Exception {
        server.close();
        StateDirectory states = StateDirectory.at(tmp.resolve("state"));
        // a dead owner: a short-lived process that has exited
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        String id = StateDirectory.newSandboxId();
        SandboxState s = states.create(id, "qemu-system-x86_64", SocketPaths.forSandbox(sockDir, id));
        String json = Files.readString(s.ownerFile()).replaceAll("\"ownerPid\" : \\d+", "\"ownerPid\" : " + p.pid());
        Files.writeString(s.ownerFile(), json);

        JsonNode rows = CliRun.run(ctx, "ps", "--json").json().path("sandboxes");
        JsonNode row = rows.get(0).path("id").asText().equals(id) ? rows.get(0) : rows.get(1);
        assertEquals("stale", row.path("state").asText());
        assertFalse(row.path("owner").path("alive").asBoolean());

        CliRun.Result r = CliRun.run(ctx, "down", id, "--json");
        assertEquals(0, r.exit(), r.toString());
        assertEquals("reaped", r.json().path("sandboxes").get(0).path("outcome").asText());
        assertFalse(Files.exists(s.dir()));
    }
}
