package io.qvm.cli;

import io.qvm.admin.SandboxStates;
import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.cli.control.ControlClient;
import io.qvm.cli.control.ControlTarget;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/** {@code qvm render}: one document to PNG, in a running sandbox or in a fresh one. */
@Command(name = "render", sortOptions = false,
        description = {"Render an untrusted SVG or PDF document to PNG inside a sandbox.",
            "Uses a running qvm up session (--id, or the first one qvm ps shows running), which hands the "
                    + "document a fresh sandbox (or, after qvm up --reuse, its one sandbox); with none, boots a fresh "
                    + "one, renders and stops it. The output says which sandbox it was. The type comes from the content (%%PDF- → pdf, else svg) "
                    + "unless --type says."},
        footer = {"", "JSON (--json), schema qvm.render/1:",
            "  {\"schema\":\"qvm.render/1\", \"input\", \"type\", \"output\", \"width\", \"height\", \"bytes\",",
            "   \"renderMillis\", \"totalMillis\", \"sandbox\":{\"id\", \"fresh\", \"mode\", \"session\", \"earlierDocuments\",",
            "   \"restored\"}}   mode: own (started for this render and stopped), fresh-per-render (a qvm up",
            "   session's never-used sandbox, stopped after), reused (qvm up --reuse: one sandbox for every document)",
            "A refused document exits 5 (error code TOO_LARGE, LIMIT_EXCEEDED, PARSE_ERROR, UNSUPPORTED, BAD_REQUEST",
            "or INTERNAL in the JSON error's \"code\"), a timeout 6."})
final class RenderCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Mixin
    SandboxOptions sandboxOptions;

    @Parameters(index = "0", paramLabel = "FILE", description = "The SVG or PDF document.")
    Path file;

    @Option(names = {"-o", "--output"}, paramLabel = "OUT", description = "The PNG to write (default: FILE with .png).")
    Path output;

    @Option(names = "--type", paramLabel = "svg|pdf", converter = TypeConverter.class,
            description = "Document type (default: from the content).")
    RenderRequest.Type type;

    @Option(names = "--page", paramLabel = "N", description = "1-based page (PDF; default 1).")
    Integer page;

    @Option(names = "--dpi", paramLabel = "D", description = "Resolution (default 96); excludes --width/--height.")
    Integer dpi;

    @Option(names = "--width", paramLabel = "W", description = "Fit into this width in pixels.")
    Integer width;

    @Option(names = "--height", paramLabel = "H", description = "Fit into this height in pixels.")
    Integer height;

    @Option(names = "--background", paramLabel = "C", converter = BackgroundConverter.class,
            description = "#RRGGBB, #RRGGBBAA or transparent (default #FFFFFF).")
    Integer background;

    @Option(names = "--id", paramLabel = "ID", description = "Render in this running sandbox.")
    String id;

    private final CliContext ctx;

    RenderCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        byte[] document;
        try {
            document = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new ParameterException(spec.commandLine(), "no such file: " + file);
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "cannot read " + file + ": " + e.getMessage());
        }
        RenderRequest request = request(document);
        Path out = output != null ? output : defaultOutput(file);
        PrintWriter err = spec.commandLine().getErr();
        Progress progress = new Progress(err, ctx.interactive() && !json.enabled());
        long t0 = System.nanoTime();
        SandboxStates states = SandboxStates.at(ctx.stateRoot(dirs.stateDir));
        RenderResult result = null;
        RenderReport.SandboxRef used = null;
        for (Sandboxes.Entry e : candidates(states)) {
            try (ControlClient client = ControlClient.connect(e.ready())) {
                progress.line("rendering in qvm up session " + e.id() + " ("
                        + UpReport.modeText(e.ready().mode(), e.ready().freshSandboxes()) + ")");
                // a fresh-per-render session may have to start the sandbox first: give it the boot's time too
                ControlTarget.Rendered rendered = client.renderServed(request,
                        Duration.ofMillis(e.ready().requestTimeoutMillis()).plusSeconds(30)
                                .plus(e.ready().freshPerRender() ? sandboxOptions.toConfig().bootTimeout() : Duration.ZERO));
                result = rendered.result();
                used = RenderReport.SandboxRef.of(e.id(), rendered.servedBy());
                break;
            } catch (IOException unreachable) {
                if (id != null) {
                    throw new CliException(ExitCode.NOT_FOUND, "NOT_RUNNING", "sandbox " + id
                            + " does not answer on its control socket: " + unreachable.getMessage(),
                            "qvm ps shows its state; qvm down " + id + " cleans it up", unreachable);
                }
                progress.line("sandbox " + e.id() + " does not answer (" + unreachable.getMessage() + "); trying the next");
            }
        }
        if (result == null) {
            SandboxConfig config = sandboxOptions.toConfig();
            progress.line("no sandbox is running: starting a fresh one");
            MissingImage.buildIfMissing(ctx, ctx.imageRoot(dirs.imageDir), progress);
            try (QemuVmBackend backend = ctx.backend(dirs, progress::line).build();
                 Sandbox sandbox = backend.start(config)) {
                progress.done();
                used = new RenderReport.SandboxRef(sandbox.id(), true, RenderReport.SandboxRef.OWN, null, 0L,
                        sandbox.bootReport().restored());
                result = sandbox.render(request);
            }
        }
        progress.done();
        write(out, result.png());
        long total = (System.nanoTime() - t0) / 1_000_000;
        Output.emit(spec.commandLine().getOut(), new RenderReport("qvm.render/1", file.toString(),
                request.type().wireName(), out.toString(), result.width(), result.height(), result.outputBytes(),
                result.renderMillis(), total, used), json.enabled());
        return ExitCode.OK.code();
    }

    /** The sandbox to use: --id's (which must be running), else every running one in id order. */
    private List<Sandboxes.Entry> candidates(SandboxStates states) throws IOException {
        if (id != null) {
            Sandboxes.Entry e = Sandboxes.find(states, id).orElseThrow(() -> new CliException(ExitCode.NOT_FOUND,
                    "NOT_FOUND", "no sandbox " + id + " in " + states.root(), "qvm ps lists the sandboxes", null));
            if (!e.running()) {
                throw new CliException(ExitCode.NOT_FOUND, "NOT_RUNNING", "sandbox " + id + " is " + e.status()
                        + ", not running", "qvm ps shows its state", null);
            }
            return List.of(e);
        }
        return Sandboxes.list(states).stream().filter(Sandboxes.Entry::running).toList();
    }

    private RenderRequest request(byte[] document) {
        RenderRequest.Type t = type != null ? type : RenderRequest.Type.sniff(document);
        if (dpi != null && (width != null || height != null)) {
            throw new ParameterException(spec.commandLine(), "give --dpi or --width/--height, not both");
        }
        try {
            return new RenderRequest(t, document, width == null ? 0 : width, height == null ? 0 : height,
                    dpi == null ? 0 : dpi, page == null ? 1 : page,
                    background == null ? RenderRequest.WHITE : background);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "invalid render options: " + e.getMessage());
        }
    }

    static Path defaultOutput(Path in) {
        String name = in.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String stem = dot > 0 ? name.substring(0, dot) : name;
        String out = stem + ".png";
        if (out.equals(name)) {
            out = stem + ".rendered.png";
        }
        Path parent = in.toAbsolutePath().getParent();
        return parent == null ? Path.of(out) : parent.resolve(out);
    }

    private static void write(Path out, byte[] png) throws IOException {
        Path abs = out.toAbsolutePath();
        Path dir = abs.getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, "." + abs.getFileName(), ".tmp");
        try {
            Files.write(tmp, png);
            Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    static final class TypeConverter implements ITypeConverter<RenderRequest.Type> {
        @Override
        public RenderRequest.Type convert(String value) {
            try {
                return RenderRequest.Type.fromWireName(value.toLowerCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("'" + value + "' is not svg or pdf");
            }
        }
    }

    static final class BackgroundConverter implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            try {
                return RenderRequest.parseBackground(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("'" + value + "': " + e.getMessage());
            }
        }
    }

    /** {@code qvm render} — schema {@code qvm.render/1}. */
    record RenderReport(String schema, String input, String type, String output, int width, int height, int bytes,
            long renderMillis, long totalMillis, SandboxRef sandbox) implements Report {

        /**
         * Which sandbox rendered the document.
         *
         * @param fresh whether no other document had been rendered in it
         * @param mode {@value #OWN} (started by this command and stopped), {@code fresh-per-render}
         *     (a qvm up session's never-used sandbox, stopped after) or {@code reused} (a qvm up
         *     session's one sandbox)
         * @param session the qvm up session's id; null for {@value #OWN}
         * @param earlierDocuments documents the sandbox rendered before this one; null when its
         *     supervisor (an older qvm) does not say
         * @param restored whether it was restored from a template (false: cold-booted); null when unknown
         */
        record SandboxRef(String id, boolean fresh, String mode, String session, Long earlierDocuments,
                Boolean restored) {

            static final String OWN = "own";

            static SandboxRef of(String session, ControlTarget.ServedBy by) {
                if (by == null) { // an older supervisor: always one reused sandbox
                    return new SandboxRef(session, false, ControlTarget.REUSED, session, null, null);
                }
                return new SandboxRef(by.sandbox(), by.fresh(), by.mode(), session, by.earlierDocuments(),
                        by.restored());
            }

            String describe() {
                String how = Boolean.FALSE.equals(restored) ? "cold-booted" : Boolean.TRUE.equals(restored)
                        ? "restored from a template" : null;
                if (OWN.equals(mode)) {
                    return "fresh sandbox " + id + (how == null ? "" : ", " + how) + ", started for this document and stopped";
                }
                if (ControlTarget.FRESH_PER_RENDER.equals(mode)) {
                    return "fresh sandbox " + id + " of qvm up session " + session + (how == null ? "" : ", " + how)
                            + ": no other document touched it; stopped after this one";
                }
                return "REUSED sandbox " + id + " of qvm up --reuse session " + session + ": "
                        + (earlierDocuments == null ? "earlier documents" : earlierDocuments + " earlier document"
                        + (earlierDocuments == 1 ? "" : "s")) + " went to the same worker";
            }
        }

        @Override
        public void printText(PrintWriter out) {
            out.printf("%s: %d x %d px, %d bytes, rendered in %d ms (%d ms total)%n  in %s%n", output, width,
                    height, bytes, renderMillis, totalMillis, sandbox.describe());
        }
    }

}
