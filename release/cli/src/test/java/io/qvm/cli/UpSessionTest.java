package io.qvm.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.FakeQemuHost;
import io.qvm.internal.process.SocketPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code qvm up} in the foreground, in-process, on the real backend against {@code FakeQemu} (a
 * peer that plays QEMU and the guest on the real sockets; nothing boots): by default each
 * {@code qvm render} lands in a sandbox of its own, stopped after it; with {@code --reuse} in the
 * one sandbox; an idle timeout and a maximum lifetime end the session by themselves; and every
 * end leaves nothing — no fake QEMU, no state, no socket directory.
 */
@Tag("unit")
@Tag("security")
class UpSessionTest {

    static final Duration LONG = Duration.ofMinutes(3);
    static final String[] SANDBOX = {"--accelerator", "tcg", "--vcpus", "1", "--boot-timeout", "60"};

    @TempDir
    Path tmp;

    FakeQemuHost host;
    CliContext ctx;
    Path svg;
    final List<CompletableFuture<CliRun.Result>> ups = new ArrayList<>();

    @BeforeEach
    void host() throws IOException {
        host = new FakeQemuHost(tmp.resolve("h")).set("renderPng", "64x48");
        ctx = CliRun.context(host.stateRoot(), host.imageRoot(), FakeImageTool.NO_BUILDS)
                .withBackends((c, image, state, progress) -> host.backend().progress(progress));
        svg = tmp.resolve("in.svg");
        Files.writeString(svg, "<svg xmlns='http://www.w3.org/2000/svg' width='64' height='48'/>");
    }

    @AfterEach
    void leaveNothingRunning() throws Exception {
        CliRun.run(ctx, "down", "--all");
        for (CompletableFuture<CliRun.Result> up : ups) {
            up.get(LONG.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        }
        host.processes().forEach(ProcessHandle::destroyForcibly);
    }

    /** Starts {@code qvm up ARGS} in the foreground in another thread; returns once its session is running. */
    CompletableFuture<CliRun.Result> up(String... args) {
        List<String> all = new ArrayList<>(List.of("up"));
        all.addAll(List.of(SANDBOX));
        all.addAll(List.of(args));
        CompletableFuture<CliRun.Result> up = new CompletableFuture<>();
        Thread t = new Thread(() -> up.complete(CliRun.run(ctx, all.toArray(String[]::new))), "qvm-up-under-test");
        t.setDaemon(true);
        t.start();
        ups.add(up);
        await().atMost(LONG).pollInterval(Duration.ofMillis(200)).until(() -> {
            if (up.isDone()) {
                throw new AssertionError("qvm up ended before it was ready: " + up.get());
            }
            return session() != null;
        });
        return up;
    }

    /** The running session's row of {@code qvm ps --json}, or null. */
    JsonNode session() {
        for (JsonNode row : CliRun.run(ctx, "ps", "--json").json().path("sandboxes")) {
            if (row.path("state").asText().equals("running")) {
                return row;
            }
        }
        return null;
    }

    CliRun.Result render(String out, String... more) {
        List<String> args = new ArrayList<>(List.of("render", svg.toString(), "-o", tmp.resolve(out).toString()));
        args.addAll(List.of(more));
        CliRun.Result r = CliRun.run(ctx, args.toArray(String[]::new));
        assertEquals(0, r.exit(), r.toString());
        return r;
    }

    void assertNothingLeft(String sessionId) throws IOException {
        await().atMost(LONG).pollInterval(Duration.ofMillis(200)).until(() ->
                host.processes().stream().noneMatch(ProcessHandle::isAlive) && isEmptyOrAbsent(
                        host.stateRoot().resolve("sandboxes")));
        assertFalse(Files.exists(SocketPaths.forSandbox(ctx.runtimeRoot(), sessionId).dir()));
        assertEquals(0, CliRun.run(ctx, "ps", "--json").json().path("sandboxes").size());
    }

    @Test
    void eachRenderGetsAFreshSandboxAndTheOneBeforeIsStopped() throws Exception {
        CompletableFuture<CliRun.Result> up = up("--json");
        JsonNode row = session();
        String sessionId = row.path("id").asText();
        assertEquals("fresh-per-render", row.path("mode").asText(), row.toString());

        JsonNode first = render("a.png", "--json").json().path("sandbox");
        assertEquals("fresh-per-render", first.path("mode").asText(), first.toString());
        assertEquals(sessionId, first.path("session").asText());
        assertTrue(first.path("fresh").asBoolean());
        assertEquals(0, first.path("earlierDocuments").asLong());
        assertTrue(first.path("restored").asBoolean(), "the template works here: " + first);
        String firstId = first.path("id").asText();
        assertNotEquals(sessionId, firstId);
        await().atMost(LONG).pollInterval(Duration.ofMillis(200)).until(() ->
                !Files.exists(host.stateRoot().resolve("sandboxes").resolve(firstId)));

        CliRun.Result text = render("b.png", "--id", sessionId);
        assertTrue(text.out().contains("fresh sandbox") && text.out().contains("of qvm up session " + sessionId),
                text.out());
        assertFalse(text.out().contains(firstId), "the second document went to another sandbox: " + text.out());

        // ps shows the sandbox kept ready as the session's; logs and down point at the session
        String[] pooled = new String[1];
        await().atMost(LONG).pollInterval(Duration.ofMillis(200)).until(() -> {
            for (JsonNode r : CliRun.run(ctx, "ps", "--json").json().path("sandboxes")) {
                if (r.path("state").asText().equals("pooled") && r.path("session").asText().equals(sessionId)) {
                    pooled[0] = r.path("id").asText();
                    return true;
                }
            }
            return false;
        });
        CliRun.Result logs = CliRun.run(ctx, "logs", sessionId, "--json");
        assertEquals(7, logs.exit(), logs.toString());
        assertEquals("NO_CONSOLE", logs.json().path("code").asText());
        CliRun.Result refused = CliRun.run(ctx, "down", pooled[0], "--json");
        assertEquals("refused", refused.json().path("sandboxes").get(0).path("outcome").asText(), refused.toString());

        CliRun.Result down = CliRun.run(ctx, "down", "--all", "--json");
        assertEquals(0, down.exit(), down.toString());
        assertEquals(1, down.json().path("sandboxes").size(), "the pooled sandbox stops with its session: " + down);
        assertEquals(sessionId, down.json().path("sandboxes").get(0).path("id").asText());
        assertEquals("stopped", down.json().path("sandboxes").get(0).path("outcome").asText(), down.toString());
        CliRun.Result ended = up.get(LONG.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(0, ended.exit(), ended.toString());
        JsonNode u = ended.json();
        assertEquals(sessionId, u.path("id").asText());
        assertEquals("fresh-per-render", u.path("mode").asText());
        assertEquals("restored", u.path("freshSandboxes").asText());
        assertEquals(1800, u.path("idleTimeoutSeconds").asLong());
        assertEquals(86400, u.path("maxLifetimeSeconds").asLong());
        assertTrue(u.path("qemuPid").isNull(), u.toString());
        assertNothingLeft(sessionId);
    }

    @Test
    void withReuseEveryRenderGoesToTheOneSandbox() throws Exception {
        CompletableFuture<CliRun.Result> up = up("--reuse");
        String id = session().path("id").asText();
        assertEquals("reused", session().path("mode").asText());

        JsonNode first = render("a.png", "--json").json().path("sandbox");
        JsonNode second = render("b.png", "--json").json().path("sandbox");
        assertEquals(id, first.path("id").asText());
        assertEquals(id, second.path("id").asText());
        assertEquals("reused", second.path("mode").asText());
        assertEquals(0, first.path("earlierDocuments").asLong());
        assertEquals(1, second.path("earlierDocuments").asLong());
        assertFalse(second.path("fresh").asBoolean());
        CliRun.Result text = render("c.png");
        assertTrue(text.out().contains("REUSED sandbox " + id) && text.out().contains("2 earlier documents"),
                text.out());

        assertEquals(0, CliRun.run(ctx, "down", id).exit());
        CliRun.Result ended = up.get(LONG.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(0, ended.exit(), ended.toString());
        assertTrue(ended.out().contains("mode: reused sandbox (--reuse)"), ended.out());
        assertNothingLeft(id);
    }

    @Test
    void whereTemplatesDoNotWorkEachRenderStillGetsItsOwnColdBootedSandboxAndBothSaySo() throws Exception {
        ctx = ctx.withBackends((c, image, state, progress) -> host.backend().templates(false).progress(progress));
        CompletableFuture<CliRun.Result> up = up();
        String sessionId = session().path("id").asText();
        JsonNode first = render("a.png", "--json").json().path("sandbox");
        assertFalse(first.path("restored").asBoolean());
        assertEquals("fresh-per-render", first.path("mode").asText());
        CliRun.Result second = render("b.png");
        assertTrue(second.out().contains("cold-booted") && !second.out().contains(first.path("id").asText()),
                second.out());

        assertEquals(0, CliRun.run(ctx, "down", sessionId).exit());
        CliRun.Result ended = up.get(LONG.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(0, ended.exit(), ended.toString());
        assertTrue(ended.out().contains("fresh sandbox per render, cold-booted"), ended.out());
        assertTrue(ended.err().contains("warning: templates do not work here"), ended.err());
        assertNothingLeft(sessionId);
    }

    @Test
    void anIdleSessionEndsByItselfSaysWhyAndLeavesNothing() throws Exception {
        ctx = ctx.withBackends((c, image, state, progress) -> host.backend().templates(false).progress(progress));
        CompletableFuture<CliRun.Result> up = up("--idle-timeout", "3s");
        String id = session().path("id").asText();
        render("a.png"); // a request: the idle time starts again after it

        CliRun.Result ended = up.get(LONG.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(0, ended.exit(), ended.toString());
        assertTrue(ended.err().contains("session " + id + " ended (no request for 3s (--idle-timeout))"),
                ended.err());
        assertNothingLeft(id);
    }

    @Test
    void theMaximumLifetimeEndsTheSessionEvenWithNoIdleTimeout() throws Exception {
        ctx = ctx.withBackends((c, image, state, progress) -> host.backend().templates(false).progress(progress));
        CompletableFuture<CliRun.Result> up = up("--reuse", "--max-lifetime", "4s", "--idle-timeout", "off");
        String id = session().path("id").asText();

        CliRun.Result ended = up.get(LONG.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(0, ended.exit(), ended.toString());
        assertTrue(ended.err().contains("it reached its maximum lifetime of 4s (--max-lifetime)"), ended.err());
        assertTrue(ended.out().contains("no idle timeout"), ended.out());
        assertNothingLeft(id);
    }

    @Test
    void aLimitThatIsNotADurationIsAUsageError() throws IOException {
        CliRun.Result r = CliRun.run(ctx, "up", "--idle-timeout", "30", "--json");
        assertEquals(2, r.exit(), r.toString());
        assertTrue(r.err().contains("--idle-timeout '30' is not a duration"), r.err());
        assertEquals(2, CliRun.run(ctx, "up", "--max-lifetime", "0s").exit());
        assertEquals(2, CliRun.run(ctx, "up", "--max-lifetime", "400d").exit());
        assertEquals(0, host.processes().size(), "nothing was started");
    }

    private static boolean isEmptyOrAbsent(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return true;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.findAny().isEmpty();
        }
    }
}
