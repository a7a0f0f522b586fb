package io.qvm.cli;

import io.qvm.admin.SandboxStates;
import io.qvm.protocol.util.ControlChars;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code qvm logs}: a sandbox's guest console, QEMU's stderr or its supervisor's log. */
@Command(name = "logs", description = "Show a sandbox's guest console (default), QEMU's stderr or its supervisor's log.",
        footer = {"", "Control characters a guest prints are shown as \\xNN.", "",
            "JSON (--json), schema qvm.logs/1:",
            "  {\"schema\":\"qvm.logs/1\", \"id\", \"stream\":\"console|stderr|supervisor\", \"file\", \"lines\":[...],",
            "   \"truncated\"}"})
final class LogsCommand implements Callable<Integer> {

    /** At most this much of a log is read. */
    static final int MAX_BYTES = 8 << 20;

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Parameters(index = "0", paramLabel = "ID", description = "The sandbox.")
    String id;

    @ArgGroup(exclusive = true)
    Stream stream = new Stream();

    static final class Stream {
        @Option(names = "--console", description = "The guest console (the default).")
        boolean console;

        @Option(names = "--stderr", description = "QEMU's stderr.")
        boolean stderr;

        @Option(names = "--supervisor", description = "The detached supervisor's log.")
        boolean supervisor;
    }

    @Option(names = {"-n", "--tail"}, paramLabel = "N", description = "Only the last N lines.")
    Integer tail;

    private final CliContext ctx;

    LogsCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        if (tail != null && tail < 0) {
            throw new ParameterException(spec.commandLine(), "--tail must be 0 or more, was " + tail);
        }
        SandboxStates states = SandboxStates.at(ctx.stateRoot(dirs.stateDir));
        Sandboxes.Entry e = Sandboxes.find(states, id).orElseThrow(() -> new CliException(ExitCode.NOT_FOUND,
                "NOT_FOUND", "no sandbox " + id + " in " + states.root(), "qvm ps lists the sandboxes", null));
        String name;
        Path file;
        boolean session = e.ready() != null && e.ready().freshPerRender();
        if (session && (stream == null || !stream.supervisor)) {
            throw new CliException(ExitCode.NOT_FOUND, "NO_CONSOLE", id + " is a qvm up session that gives every "
                    + "render a fresh sandbox: it has no console or QEMU of its own, and each sandbox's logs go with "
                    + "it when it stops", "qvm ps lists its pooled sandboxes (qvm logs <their id> while they run); "
                    + (e.ready().supervisorLog() != null ? "qvm logs " + id + " --supervisor shows the session's log"
                            : "the foreground qvm up shows the session's own lines"), null);
        }
        if (stream != null && stream.stderr) {
            name = "stderr";
            file = e.state().stderrLog();
        } else if (stream != null && stream.supervisor) {
            name = "supervisor";
            if (e.ready() != null && e.ready().supervisorLog() != null) {
                file = Path.of(e.ready().supervisorLog());
            } else if (Files.exists(e.state().dir().resolve(Launch.LOG))) {
                file = e.state().dir().resolve(Launch.LOG);
            } else {
                throw new CliException(ExitCode.NOT_FOUND, "NO_SUPERVISOR", "sandbox " + id
                        + " has no supervisor log (it is not hosted by qvm up --detach)", null, null);
            }
        } else {
            name = "console";
            file = e.state().consoleLog();
        }
        Read r = read(file, tail);
        Output.emit(spec.commandLine().getOut(), new LogsReport("qvm.logs/1", id, name, file.toString(), r.lines,
                r.truncated), json.enabled());
        return ExitCode.OK.code();
    }

    private record Read(List<String> lines, boolean truncated) {
    }

    /** The file's last {@link #MAX_BYTES} at most, as sanitised lines, the last {@code tail} of them. */
    static Read read(Path file, Integer tail) throws IOException {
        if (!Files.exists(file)) {
            return new Read(List.of(), false);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            long start = Math.max(0, size - MAX_BYTES);
            ByteBuffer buf = ByteBuffer.allocate((int) (size - start));
            while (buf.hasRemaining() && ch.read(buf, start + buf.position()) > 0) {
                // until full or end of file
            }
            buf.flip();
            String text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
                    .onUnmappableCharacter(CodingErrorAction.REPLACE).decode(buf).toString();
            List<String> lines = new ArrayList<>(Arrays.asList(text.split("\r?\n", -1)));
            if (!lines.isEmpty() && lines.get(lines.size() - 1).isEmpty()) {
                lines.remove(lines.size() - 1);
            }
            boolean truncated = start > 0;
            if (truncated && !lines.isEmpty()) {
                lines.remove(0); // cut off in the middle
            }
            if (tail != null && lines.size() > tail) {
                lines = lines.subList(lines.size() - tail, lines.size());
                truncated = true;
            }
            List<String> out = new ArrayList<>(lines.size());
            lines.forEach(l -> out.add(ControlChars.escape(l, "\t", "\r")));
            return new Read(out, truncated);
        }
    }

    /** {@code qvm logs} — schema {@code qvm.logs/1}. */
    record LogsReport(String schema, String id, String stream, String file, List<String> lines, boolean truncated)
            implements Report {
        @Override
        public void printText(PrintWriter out) {
            lines.forEach(out::println);
        }
    }
}
