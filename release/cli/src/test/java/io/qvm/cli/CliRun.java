package io.qvm.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;

/** Runs {@code qvm} in-process through the same factory as {@code main}, capturing out, err and the exit code. */
final class CliRun {

    static final ObjectMapper JSON = new ObjectMapper();

    record Result(int exit, String out, String err) {
        JsonNode json() {
            try {
                return JSON.readTree(out);
            } catch (Exception e) {
                throw new AssertionError("stdout is not JSON: " + e.getMessage() + "\n--- out\n" + out + "\n--- err\n" + err);
            }
        }

        @Override
        public String toString() {
            return "exit " + exit + "\n--- out\n" + out + "\n--- err\n" + err;
        }
    }

    private CliRun() {
    }

    /** A context whose state directory and image root are {@code stateRoot} and {@code imageRoot}. */
    static CliContext context(Path stateRoot, Path imageRoot, ImageTool tool) {
        Map<String, String> env = new HashMap<>(System.getenv());
        env.put("QVM_STATE", stateRoot.toString());
        if (imageRoot != null) {
            env.put("QVM_IMAGE_DIR", imageRoot.toString());
        }
        return CliContext.system().withEnv(env).withImageTool(tool);
    }

    static Result run(CliContext ctx, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = QvmCli.commandLine(ctx);
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }
}
