package io.qvm.reliability;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/** {@code reliability.json} (schema {@code qvm.reliability/1}) and {@code reliability.md} of a {@link Reliability.Report}. */
public final class ReliabilityReport {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private ReliabilityReport() {
    }

    public static ObjectNode json(Reliability.Report r, String host) {
        ObjectNode root = JSON.createObjectNode();
        root.put("schema", "qvm.reliability/1");
        root.put("started", r.started().toString());
        root.put("seconds", r.took().toMillis() / 1000.0);
        root.put("host", host);
        root.put("allHeld", r.allHeld());
        root.set("options", JSON.valueToTree(r.options()));
        ArrayNode conf = root.putArray("confinements");
        r.confinements().forEach(conf::add);
        ArrayNode cats = root.putArray("categories");
        for (Reliability.Category c : r.categories()) {
            ObjectNode n = cats.addObject();
            n.put("name", c.name());
            n.put("tried", c.tried());
            n.put("held", c.held());
            n.put("lost", c.lost());
            n.put("orphans", c.orphans());
            n.put("seconds", c.took().toMillis() / 1000.0);
            ObjectNode o = n.putObject("outcomes");
            c.outcomes().forEach(o::put);
            ArrayNode notes = n.putArray("notes");
            c.notes().forEach(notes::add);
        }
        return root;
    }

    public static String markdown(Reliability.Report r, String host, String command) {
        StringBuilder md = new StringBuilder("# qvm reliability report\n\n");
        md.append("Host: ").append(host).append(". Started ").append(r.started()).append(", took ")
                .append(String.format(Locale.ROOT, "%.0f", r.took().toMillis() / 1000.0)).append(" s. Command: `")
                .append(command).append("`.\n\n");
        md.append("| category | tried | held | lost | orphans | seconds | outcomes |\n");
        md.append("| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
        for (Reliability.Category c : r.categories()) {
            md.append("| ").append(c.name()).append(" | ").append(c.tried()).append(" | ").append(c.held()).append(" | ")
                    .append(c.lost()).append(" | ").append(c.orphans()).append(" | ")
                    .append(String.format(Locale.ROOT, "%.0f", c.took().toMillis() / 1000.0)).append(" | ")
                    .append(c.outcomes().toString().replace("|", "\\|")).append(" |\n");
        }
        md.append("\nConfinements observed on a running sandbox:\n\n");
        r.confinements().forEach(c -> md.append("- ").append(c).append('\n'));
        for (Reliability.Category c : r.categories()) {
            if (!c.notes().isEmpty()) {
                md.append("\nNotes, ").append(c.name()).append(":\n\n");
                c.notes().forEach(n -> md.append("- ").append(n.replace("\n", " ")).append('\n'));
            }
        }
        md.append("\n").append(r.allHeld() ? "Every case held; nothing was left behind.\n"
                : "NOT every case held, or something was left behind: see the counts above.\n");
        return md.toString();
    }

    /** Writes both files into {@code dir}. */
    public static void write(Reliability.Report r, String host, String command, Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("reliability.json"), JSON.writeValueAsString(json(r, host)) + "\n");
        Files.writeString(dir.resolve("reliability.md"), markdown(r, host, command));
    }
}
