package io.qvm.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.server.internal.Problem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The README's table of qvm serve's errors is the code's ({@link Problem#TABLE}), row for row. */
@Tag("unit")
class ServerReadmeTest {

    @Test
    void theReadmeErrorTableIsTheCodes() throws Exception {
        String readme = Files.readString(Path.of("../../README.md"));
        int at = readme.indexOf("| cause | status | code | retry | `Retry-After` |");
        assertTrue(at > 0, "the README has qvm serve's error table");
        List<String> rows = new ArrayList<>();
        for (String line : readme.substring(at).split("\n")) {
            if (!line.startsWith("|")) {
                break;
            }
            rows.add(line);
        }
        List<String> expected = new ArrayList<>();
        expected.add("| cause | status | code | retry | `Retry-After` |");
        expected.add("| --- | --- | --- | --- | --- |");
        for (Problem.Row r : Problem.TABLE) {
            expected.add("| " + r.cause() + " | " + r.status() + " | `" + r.code() + "` | "
                    + (r.retryable() ? "yes" : "no") + " | "
                    + (r.retryAfterSeconds() > 0 ? r.retryAfterSeconds() + " s" : "") + " |");
        }
        assertEquals(String.join("\n", expected), String.join("\n", rows));
    }
}
