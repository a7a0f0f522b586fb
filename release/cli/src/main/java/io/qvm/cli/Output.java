package io.qvm.cli;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.io.UncheckedIOException;

/** Renders a {@link Report} as text or JSON, and a {@link CliException} as its JSON error object. */
public final class Output {

    /** The mapper every CLI JSON goes through: indented, nulls kept (the schema is stable). */
    public static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .setSerializationInclusion(JsonInclude.Include.ALWAYS);

    private Output() {
    }

    /** Prints {@code report} on {@code out}, as JSON when {@code json}. */
    public static void emit(PrintWriter out, Report report, boolean json) {
        if (json) {
            try {
                out.println(JSON.writeValueAsString(report));
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new UncheckedIOException(e);
            }
        } else {
            report.printText(out);
        }
        out.flush();
    }

    /**
     * The JSON error object ({@code qvm.error/1}):
     * {@code {"schema","ok":false,"exitCode","exitName","code","message","hint"}}.
     */
    public static ObjectNode error(CliException e) {
        ObjectNode n = JSON.createObjectNode();
        n.put("schema", "qvm.error/1");
        n.put("ok", false);
        n.put("exitCode", e.exitCode().code());
        n.put("exitName", e.exitCode().name());
        n.put("code", e.code());
        n.put("message", e.getMessage());
        n.put("hint", e.hint());
        return n;
    }
}
