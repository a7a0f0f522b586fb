package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The command tree, help, usage errors (exit 2), completion, and commands that need no sandbox. */
@Tag("unit")
class QvmCliTest {

    @TempDir
    Path tmp;

    CliContext ctx;

    @BeforeEach
    void setUp() {
        ctx = CliRun.context(tmp.resolve("state"), tmp.resolve("images"), FakeImageTool.NO_BUILDS);
    }

    @Test
    void helpListsEveryCommandAndTheExitCodes() {
        CliRun.Result r = CliRun.run(ctx, "--help");
        assertEquals(0, r.exit(), r.toString());
        for (String c : List.of("up", "render", "ps", "down", "logs", "doctor", "image", "template", "bench", "completion")) {
            assertTrue(r.out().contains("  " + c), c + " missing:\n" + r.out());
        }
        for (ExitCode c : ExitCode.values()) {
            assertTrue(r.out().contains(c.description()), c + " missing:\n" + r.out());
        }
    }

    @Test
    void subcommandHelpDocumentsItsJsonSchema() {
        for (String c : List.of("up", "render", "ps", "down", "logs", "doctor")) {
            CliRun.Result r = CliRun.run(ctx, c, "--help");
            assertEquals(0, r.exit(), r.toString());
            assertTrue(r.out().contains("\"schema\":\"qvm." + c + "/1\""), c + ":\n" + r.out());
            assertTrue(r.out().contains("Exit codes:"), c + ":\n" + r.out());
        }
        assertTrue(CliRun.run(ctx, "image", "info", "--help").out().contains("qvm.image/1"));
    }

    @Test
    void versionPrints() {
        CliRun.Result r = CliRun.run(ctx, "--version");
        assertEquals(0, r.exit());
        assertTrue(r.out().startsWith("qvm "), r.out());
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "",                                  // no command
        "frobnicate",                        // unknown command
        "ps --bogus",                        // unknown option
        "render",                            // missing FILE
        "render MISSING.svg",                // no such file
        "render DOC --dpi 100 --width 10",   // exclusive size options
        "render DOC --background purple",    // bad colour
        "render DOC --type gif",             // bad type
        "render DOC --page 2",               // an SVG has one page
        "render DOC --width -3",             // out of range
        "down",                              // neither ID nor --all
        "down abc --all",                    // both
        "logs",                              // missing ID
        "logs abc --console --stderr",       // exclusive streams
        "logs abc --tail -1",                // negative tail
        "up --detach --supervise abc",       // exclusive
        "up --wait 10",                      // --wait needs --detach
        "up --memory 10",                    // invalid config
        "up --accelerator warp",             // invalid config
        "image",                             // missing subcommand
        "image verify --arch sparc",         // bad arch
    })
    void badArgumentsExitTwoWithAUsageMessage(String line) throws Exception {
        Path doc = tmp.resolve("doc.svg");
        Files.writeString(doc, "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>");
        String[] args = line.isEmpty() ? new String[0] : line.replace("DOC", doc.toString()).split(" ");
        CliRun.Result r = CliRun.run(ctx, args);
        assertEquals(2, r.exit(), line + " → " + r);
        assertTrue(r.err().startsWith("qvm: "), r.toString());
        assertTrue(r.err().contains("Usage:") || r.err().contains("INVALID") || r.err().contains("invalid"), r.toString());
    }

    @Test
    void usageErrorWithJsonAlsoPrintsTheErrorObject() {
        CliRun.Result r = CliRun.run(ctx, "down", "--json");
        assertEquals(2, r.exit(), r.toString());
        JsonNode j = r.json();
        assertEquals("qvm.error/1", j.path("schema").asText());
        assertEquals(2, j.path("exitCode").asInt());
        assertEquals("USAGE", j.path("exitName").asText());
    }

    @Test
    void psWithNoSandboxes() {
        CliRun.Result r = CliRun.run(ctx, "ps");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().contains("no sandboxes"), r.out());
        JsonNode j = CliRun.run(ctx, "ps", "--json").json();
        assertEquals("qvm.ps/1", j.path("schema").asText());
        assertTrue(j.path("sandboxes").isArray());
        assertEquals(0, j.path("sandboxes").size());
        assertEquals(tmp.resolve("state").toString(), j.path("stateDir").asText());
    }

    @Test
    void unknownSandboxIsExitSeven() {
        for (String[] args : List.of(new String[] {"logs", "nosuchbox"}, new String[] {"down", "nosuchbox"})) {
            CliRun.Result r = CliRun.run(ctx, args);
            assertEquals(7, r.exit(), r.toString());
            assertTrue(r.err().contains("no sandbox nosuchbox"), r.toString());
        }
        JsonNode j = CliRun.run(ctx, "logs", "nosuchbox", "--json").json();
        assertEquals(7, j.path("exitCode").asInt());
        assertEquals("NOT_FOUND", j.path("code").asText());
        assertTrue(j.path("hint").asText().contains("qvm ps"));
    }

    @Test
    void downAllWithNothingIsFine() {
        CliRun.Result r = CliRun.run(ctx, "down", "--all", "--json");
        assertEquals(0, r.exit(), r.toString());
        assertEquals("qvm.down/1", r.json().path("schema").asText());
        assertEquals(0, r.json().path("sandboxes").size());
    }

    @Test
    void completionPrintsABashScript() {
        CliRun.Result r = CliRun.run(ctx, "completion");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().contains("complete -F"), r.out().substring(0, Math.min(300, r.out().length())));
        for (String c : List.of("render", "doctor", "--detach", "--json")) {
            assertTrue(r.out().contains(c), c);
        }
    }

    @Test
    void imageInfoWithoutAnImageSaysWhatIsMissing() {
        CliRun.Result r = CliRun.run(ctx, "image", "info", "--json");
        assertEquals(8, r.exit(), r.toString());
        assertFalse(r.json().path("ok").asBoolean(), r.toString());
        assertTrue(r.json().path("problems").get(0).asText().contains("no image at"), r.toString());
    }

    @Test
    void pdfIsSniffedFromTheContent() {
        assertEquals(io.qvm.protocol.RenderRequest.Type.PDF, io.qvm.protocol.RenderRequest.Type.sniff("\n%PDF-1.7\n".getBytes()));
        assertEquals(io.qvm.protocol.RenderRequest.Type.SVG, io.qvm.protocol.RenderRequest.Type.sniff("<svg/>".getBytes()));
        assertEquals(io.qvm.protocol.RenderRequest.Type.SVG, io.qvm.protocol.RenderRequest.Type.sniff(new byte[0]));
        assertEquals(Path.of("/a/b.png"), RenderCommand.defaultOutput(Path.of("/a/b.svg")));
        assertEquals(Path.of("/a/b.rendered.png"), RenderCommand.defaultOutput(Path.of("/a/b.png")));
    }
}
