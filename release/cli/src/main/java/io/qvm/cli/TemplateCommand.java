package io.qvm.cli;

import io.qvm.admin.Templates;
import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code qvm template build|ls|rm}: the snapshot templates sandboxes are restored from. */
@Command(name = "template", description = "Build, list or remove snapshot templates (a VM booted once, saved; sandboxes are its clones).",
        subcommands = {TemplateCommand.Build.class, TemplateCommand.Ls.class, TemplateCommand.Rm.class})
final class TemplateCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "missing subcommand: build, ls or rm");
    }

    static final String FOOTER_JSON = "JSON (--json), schema qvm.template/1: {\"schema\":\"qvm.template/1\", \"action\", "
            + "\"dir\", \"templates\":[{\"id\", \"mode\", \"memoryMib\", \"created\", \"bootMillis\", \"saveMillis\", "
            + "\"stateBytes\", \"ramBytes\", \"current\", \"problem\"}], \"removed\":[...]}";

    /** {@code $QVM_CACHE/templates}, else {@code ~/.cache/qvm/templates}. */
    static Templates store(CliContext ctx) {
        return Templates.defaultLocation(ctx.env());
    }

    record Row(String id, String mode, int memoryMib, String created, long bootMillis, long saveMillis,
            long stateBytes, Long ramBytes, boolean current, String problem) {
        static Row of(Templates.TemplateInfo m, boolean current, String problem) {
            return new Row(m.id(), m.mode(), m.memoryMib(), m.created(), m.bootMillis(), m.saveMillis(), m.stateBytes(),
                    m.ramBytes().isPresent() ? m.ramBytes().getAsLong() : null, current, problem.isEmpty() ? null : problem);
        }
    }

    record TemplateReport(String schema, String action, String dir, List<Row> templates, List<String> removed)
            implements Report {
        @Override
        public void printText(PrintWriter out) {
            if (action.equals("rm")) {
                out.println(removed.isEmpty() ? "no template removed" : "removed " + String.join(", ", removed));
                return;
            }
            if (templates.isEmpty()) {
                out.println("no templates in " + dir + " (the first sandbox builds one, or: qvm template build)");
                return;
            }
            out.printf("%-21s %-10s %7s %-24s %9s %8s %9s%n", "ID", "MODE", "MEMORY", "CREATED", "BOOT", "SAVE",
                    "STATE");
            for (Row r : templates) {
                out.printf("%-21s %-10s %6dM %-24s %7.1fs %6dms %7dK%s%s%n", r.id() + (r.current() ? "*" : ""), r.mode(),
                        r.memoryMib(), r.created(), r.bootMillis() / 1000.0, r.saveMillis(), r.stateBytes() / 1024,
                        r.problem() == null ? "" : "  ! " + r.problem(), "");
            }
            out.println("(* the template of the default configuration on this host; templates live in " + dir + ")");
        }
    }

    @Command(name = "build", description = "Build the template of this configuration now (reused when it exists and verifies).",
            footer = {"", FOOTER_JSON})
    static final class Build implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        @Mixin
        JsonOption json;
        @Mixin
        DirOptions dirs;
        @Mixin
        SandboxOptions sandboxOptions;
        private final CliContext ctx;

        Build(CliContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public Integer call() {
            SandboxConfig config = sandboxOptions.toConfig();
            Progress progress = new Progress(spec.commandLine().getErr(), ctx.interactive() && !json.enabled());
            MissingImage.buildIfMissing(ctx, ctx.imageRoot(dirs.imageDir), progress);
            Templates store = store(ctx);
            Templates.TemplateInfo t;
            try (QemuVmBackend backend = ctx.backend(dirs, progress::line).build()) {
                t = backend.admin().buildTemplate(config);
            } finally {
                progress.done();
            }
            Output.emit(spec.commandLine().getOut(), new TemplateReport("qvm.template/1", "build",
                    store.root().toString(), List.of(Row.of(t, true, "")), List.of()), json.enabled());
            return ExitCode.OK.code();
        }
    }

    @Command(name = "ls", description = "List the templates.", footer = {"", FOOTER_JSON})
    static final class Ls implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        @Mixin
        JsonOption json;
        @Mixin
        DirOptions dirs;
        private final CliContext ctx;

        Ls(CliContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public Integer call() throws Exception {
            Templates store = store(ctx);
            String current = currentId();
            List<Row> rows = new ArrayList<>();
            for (Templates.Entry l : store.list()) {
                if (l.info().isPresent()) {
                    rows.add(Row.of(l.info().get(), l.id().equals(current), l.problem()));
                } else {
                    rows.add(new Row(l.id(), "?", 0, "?", 0, 0, 0, null, false, l.problem()));
                }
            }
            Output.emit(spec.commandLine().getOut(), new TemplateReport("qvm.template/1", "ls", store.root().toString(),
                    rows, List.of()), json.enabled());
            return ExitCode.OK.code();
        }

        /** The default config's template id here, or null when it cannot be worked out (no image, no QEMU). */
        private String currentId() {
            try (QemuVmBackend backend = QemuVmBackend.builder().imageDir(ctx.imageRoot(dirs.imageDir))
                    .stateDirectory(ctx.stateRoot(dirs.stateDir)).reapOnStart(false).build()) {
                return backend.admin().templateId(SandboxConfig.defaults());
            } catch (RuntimeException e) {
                return null;
            }
        }
    }

    @Command(name = "rm", description = "Remove templates by id (or a prefix of at least 4 hex digits), or --all.",
            footer = {"", FOOTER_JSON})
    static final class Rm implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        @Mixin
        JsonOption json;
        @Parameters(arity = "0..*", paramLabel = "ID")
        List<String> ids = new ArrayList<>();
        @Option(names = "--all", description = "Remove every template.")
        boolean all;
        private final CliContext ctx;

        Rm(CliContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public Integer call() throws Exception {
            if (all == !ids.isEmpty()) {
                throw new CliException(ExitCode.USAGE, "give template ids or --all (not both)");
            }
            Templates store = store(ctx);
            List<String> removed = new ArrayList<>();
            if (all) {
                removed.addAll(store.removeAll());
            } else {
                for (String id : ids) {
                    List<String> r;
                    try {
                        r = store.remove(id);
                    } catch (IllegalArgumentException e) {
                        throw new CliException(ExitCode.USAGE, e.getMessage());
                    }
                    if (r.isEmpty()) {
                        throw new CliException(ExitCode.NOT_FOUND, "NO_TEMPLATE", "no template " + id + " in "
                                + store.root(), "qvm template ls lists them", null);
                    }
                    removed.addAll(r);
                }
            }
            Output.emit(spec.commandLine().getOut(), new TemplateReport("qvm.template/1", "rm", store.root().toString(),
                    List.of(), removed), json.enabled());
            return ExitCode.OK.code();
        }
    }
}
