package io.qvm.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.internal.template.Template;
import io.qvm.internal.template.TemplateKey;
import io.qvm.internal.template.TemplateMode;
import io.qvm.internal.template.TemplateStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code qvm template ls|rm} on a real template store (templates made by a builder that writes files, no VM). */
@Tag("unit")
class TemplateCommandTest {

    @TempDir
    Path tmp;

    CliContext ctx;
    TemplateStore store;

    @BeforeEach
    void setUp() {
        Map<String, String> env = new HashMap<>(CliRun.context(tmp.resolve("state"), tmp.resolve("images"), FakeImageTool.NO_BUILDS)
                .env());
        env.put(io.qvm.internal.host.QvmEnvironment.CACHE, tmp.resolve("cache").toString());
        ctx = CliRun.context(tmp.resolve("state"), tmp.resolve("images"), FakeImageTool.NO_BUILDS).withEnv(env);
        store = TemplateStore.at(tmp.resolve("cache").resolve("templates"));
    }

    private Template template(String memory) {
        TreeMap<String, String> inputs = new TreeMap<>(Map.of("format", TemplateKey.FORMAT, "mode", "shared-ram",
                "argv", "qemu\n-m\n" + memory + "M"));
        return store.obtain(new TemplateKey(inputs), TemplateMode.SHARED_RAM, (dir, mode) -> {
            Files.write(dir.resolve(Template.STATE), new byte[] {1, 2, 3});
            Files.write(dir.resolve(Template.RAM), new byte[4096]);
            return new TemplateStore.Built(Integer.parseInt(memory), 1234, 5);
        }, line -> { });
    }

    @Test
    void lsListsEveryTemplateAsTextAndJson() {
        Template a = template("512");
        Template b = template("1024");
        CliRun.Result text = CliRun.run(ctx, "template", "ls");
        assertEquals(0, text.exit(), text.toString());
        assertTrue(text.out().contains(a.id()) && text.out().contains(b.id()), text.out());
        assertTrue(text.out().contains("shared-ram"), text.out());

        JsonNode json = CliRun.run(ctx, "template", "ls", "--json").json();
        assertEquals("qvm.template/1", json.path("schema").asText());
        assertEquals(2, json.path("templates").size());
        JsonNode first = json.path("templates").get(0);
        assertEquals(1234, first.path("bootMillis").asLong());
        assertEquals(3, first.path("stateBytes").asLong());
        assertTrue(first.path("problem").isNull(), first.toString());
    }

    @Test
    void rmRemovesByIdPrefixOrAllAndSaysWhenNothingMatches() {
        Template a = template("512");
        Template b = template("1024");
        CliRun.Result r = CliRun.run(ctx, "template", "rm", a.id().substring(0, 8), "--json");
        assertEquals(0, r.exit(), r.toString());
        assertEquals(a.id(), r.json().path("removed").get(0).asText());
        assertFalse(Files.exists(a.dir()));
        assertTrue(Files.exists(b.dir()));

        assertEquals(ExitCode.NOT_FOUND.code(), CliRun.run(ctx, "template", "rm", "ffffffff").exit());
        assertEquals(ExitCode.USAGE.code(), CliRun.run(ctx, "template", "rm", "ab").exit(), "a prefix of 4+ hex digits");
        assertEquals(ExitCode.USAGE.code(), CliRun.run(ctx, "template", "rm").exit(), "ids or --all");

        CliRun.Result all = CliRun.run(ctx, "template", "rm", "--all");
        assertEquals(0, all.exit(), all.toString());
        assertFalse(Files.exists(b.dir()));
        assertTrue(CliRun.run(ctx, "template", "ls").out().contains("no templates"));
    }

    @Test
    void aTemplateWhoseMetaDoesNotMatchItsKeyIsFlagged() throws Exception {
        Template a = template("512");
        Path meta = a.dir().resolve(Template.META);
        Files.writeString(meta, Files.readString(meta).replace("\"key\" : \"", "\"key\" : \"00"));
        JsonNode t = CliRun.run(ctx, "template", "ls", "--json").json().path("templates").get(0);
        assertTrue(t.path("problem").asText().contains("does not match"), t.toString());
    }
}
