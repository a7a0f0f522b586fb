package io.qvm.cli;

import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code qvm} command line. {@link #commandLine(CliContext)} is the one factory: {@link #main}
 * and the tests both use it, so what the tests run is what users run.
 *
 * <pre>{@code
 * StringWriter out = new StringWriter();
 * CommandLine cli = QvmCli.commandLine(CliContext.system());
 * cli.setOut(new PrintWriter(out));
 * int exit = cli.execute("ps", "--json");
 * }</pre>
 *
 * Data goes to {@link CommandLine#getOut()}, diagnostics and progress to
 * {@link CommandLine#getErr()}; every failure becomes an {@link ExitCode} through
 * {@link Failures} (with {@code --json}, also a {@code qvm.error/1} object on stdout).
 */
@Command(name = "qvm", mixinStandardHelpOptions = true, scope = CommandLine.ScopeType.INHERIT,
        versionProvider = QvmCli.Version.class,
        description = {"Run untrusted work (rendering SVG and PDF to PNG) inside a NIC-less QEMU VM with gVisor inside."},
        subcommands = {UpCommand.class, RenderCommand.class, ServeCommand.class, PsCommand.class, DownCommand.class, LogsCommand.class,
            DoctorCommand.class, ImageCommand.class, TemplateCommand.class, BenchCommand.class, ReliabilityCommand.class, ReleaseCommand.class, SelftestCommand.class, CompletionCommand.class, CommandLine.HelpCommand.class},
        footer = {"", "Environment: QVM_STATE (state directory), QVM_IMAGE_DIR (images), QVM_RUNTIME_DIR (sockets),",
            "QVM_QEMU (QEMU binary or directory), QVM_CACHE (download and probe cache), QVM_LOG (library log level:",
            "info, debug; default: errors only). JSON schemas: docs/cli-json.md."})
public final class QvmCli implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "missing command");
    }

    public static void main(String[] args) {
        System.setProperty(io.qvm.admin.SandboxRecord.PROGRAM_PROPERTY, Sandboxes.CLI_PROGRAM); // owner.json says so
        String supervisorLog = System.getProperty(RotatingLog.PROPERTY);
        if (supervisorLog != null) {
            // a detached supervisor runs for days: its output goes to a capped, rotated log
            // (first, before logging or picocli capture System.err)
            try {
                RotatingLog.installAsStdio(java.nio.file.Path.of(supervisorLog));
            } catch (java.io.IOException | RuntimeException e) {
                System.err.println("qvm: cannot open the supervisor log " + supervisorLog + " (" + e
                        + "); writing to the launcher's file without a cap");
            }
        }
        quietLibraryLogging(System.getenv("QVM_LOG"));
        CommandLine cli = commandLine(CliContext.system());
        int code = cli.execute(args);
        cli.getOut().flush();
        cli.getErr().flush();
        System.exit(code);
    }

    /**
     * The CLI tells the user what happens through its own progress lines (the accelerator fallback
     * included), so the library's {@code System.Logger} records stay out of the terminal unless
     * {@code QVM_LOG} names a level ({@code info}, {@code debug}, {@code all}).
     */
    static void quietLibraryLogging(String level) {
        java.util.logging.Level l = java.util.logging.Level.SEVERE;
        if (level != null && !level.isBlank()) {
            try {
                l = java.util.logging.Level.parse(level.strip().toUpperCase(java.util.Locale.ROOT)
                        .replace("DEBUG", "FINE"));
            } catch (IllegalArgumentException unknown) {
                l = java.util.logging.Level.INFO;
            }
        }
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        root.setLevel(l);
        for (java.util.logging.Handler h : root.getHandlers()) {
            h.setLevel(l);
        }
    }

    /** The {@code qvm} command line for {@code ctx}, with qvm's exit codes and error handling. */
    public static CommandLine commandLine(CliContext ctx) {
        CommandLine cli = new CommandLine(new QvmCli(), new Factory(ctx));
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        cli.setExecutionExceptionHandler(EXECUTION_HANDLER);
        cli.setParameterExceptionHandler(PARAMETER_HANDLER);
        cli.setExitCodeExceptionMapper(t -> Failures.classify(t).exitCode().code());
        applyExitCodes(cli);
        return cli;
    }

    private static void applyExitCodes(CommandLine cl) {
        cl.getCommandSpec().usageMessage().exitCodeListHeading("%nExit codes:%n").exitCodeList(ExitCode.helpList());
        cl.getCommandSpec().exitCodeOnInvalidInput(ExitCode.USAGE.code());
        cl.getCommandSpec().exitCodeOnExecutionException(ExitCode.ERROR.code());
        cl.getSubcommands().values().forEach(QvmCli::applyExitCodes);
    }

    private static final IExecutionExceptionHandler EXECUTION_HANDLER = (ex, cl, parseResult) -> {
        CliException c = Failures.classify(ex);
        report(c, cl, wantsJson(parseResult));
        return c.exitCode().code();
    };

    private static final IParameterExceptionHandler PARAMETER_HANDLER = (ex, args) -> {
        CommandLine cl = ex.getCommandLine();
        PrintWriter err = cl.getErr();
        err.println("qvm: " + ex.getMessage());
        UnmatchedArgumentException.printSuggestions(ex, err);
        err.println();
        cl.usage(err, cl.getColorScheme());
        if (List.of(args).contains("--json")) {
            cl.getOut().println(Output.error(new CliException(ExitCode.USAGE, "USAGE", ex.getMessage(),
                    "qvm " + cl.getCommandName() + " --help", null)).toPrettyString());
            cl.getOut().flush();
        }
        err.flush();
        return ExitCode.USAGE.code();
    };

    static void report(CliException c, CommandLine cl, boolean json) {
        PrintWriter err = cl.getErr();
        err.println("qvm: error: " + c.getMessage());
        if (c.hint() != null) {
            err.println("qvm: hint: " + c.hint());
        }
        if (c.exitCode() == ExitCode.ERROR && "INTERNAL".equals(c.code()) && c.getCause() != null) {
            c.getCause().printStackTrace(err);
        }
        err.flush();
        if (json) {
            cl.getOut().println(Output.error(c).toPrettyString());
            cl.getOut().flush();
        }
    }

    private static boolean wantsJson(ParseResult pr) {
        ParseResult p = pr;
        while (p.hasSubcommand()) {
            p = p.subcommand();
        }
        return p.hasMatchedOption("--json");
    }

    /** Creates commands, handing them the {@link CliContext} when their constructor takes one. */
    private static final class Factory implements CommandLine.IFactory {
        private final CliContext ctx;

        Factory(CliContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public <K> K create(Class<K> cls) throws Exception {
            try {
                Constructor<K> c = cls.getDeclaredConstructor(CliContext.class);
                c.setAccessible(true);
                return c.newInstance(ctx);
            } catch (NoSuchMethodException e) {
                return CommandLine.defaultFactory().create(cls);
            }
        }
    }

    /** {@code qvm --version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = QvmCli.class.getPackage().getImplementationVersion();
            return new String[] {"qvm " + (v == null ? "0.1.0-SNAPSHOT" : v), "Java " + Runtime.version()};
        }
    }
}
