package io.qvm.cli;

import io.qvm.QemuVmBackend;
import io.qvm.SandboxConfig;
import io.qvm.protocol.util.FileTrees;
import io.qvm.reliability.Reliability;
import io.qvm.reliability.ReliabilityReport;
import io.qvm.reliability.RunStates;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code qvm reliability}: the boundaries under boots, renders, load and faults, counted (see {@link Reliability}). */
@Command(name = "reliability", description = "Boot, render, load (with hostile documents, several callers) and fault "
        + "(QEMU killed or frozen mid-request) real sandboxes; count per category what held, what was lost and "
        + "what was left behind; write reliability.json and reliability.md.",
        footer = {"", "The defaults are the full run (50 boots, 2,000 renders, 1,000 load requests, 5 rounds of "
                + "faults): about an hour under TCG. Exit status 1 when anything was lost or left behind."})
final class ReliabilityCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Option(names = "--out", paramLabel = "DIR", description = "Where reliability.json and reliability.md go "
            + "(default out/reliability).")
    Path out;

    @Option(names = "--boots", paramLabel = "N", description = "Cold boots (default 50).")
    int boots = Reliability.Options.full().boots();

    @Option(names = "--renders", paramLabel = "N", description = "Renders in a reused sandbox (default 2000).")
    int renders = Reliability.Options.full().renders();

    @Option(names = "--load", paramLabel = "N", description = "Requests through a pool (default 1000).")
    int load = Reliability.Options.full().loadRequests();

    @Option(names = "--callers", paramLabel = "N", description = "Concurrent callers of the load (default 2).")
    int callers = Reliability.Options.full().callers();

    @Option(names = "--faults", paramLabel = "N", description = "Rounds of each fault (default 5).")
    int faults = Reliability.Options.full().faults();

    @Option(names = "--serve", paramLabel = "N", description = "Requests over HTTP through qvm serve's server, two "
            + "tenants, one in ten hostile (default 200; 0: none).")
    int serve = Reliability.Options.full().serveRequests();

    @Option(names = "--serve-clients", paramLabel = "N", description = "Concurrent HTTP clients (default 4).")
    int serveClients = Reliability.Options.full().serveClients();

    private final CliContext ctx;

    ReliabilityCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        Path imageRoot = ctx.imageRoot(dirs.imageDir);
        Path outDir = out != null ? out : imageRoot.getParent().resolve("reliability");
        Progress progress = new Progress(spec.commandLine().getErr(), ctx.interactive() && !json.enabled());
        MissingImage.buildIfMissing(ctx, imageRoot, progress);
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        RunStates.removeStale(tmp).forEach(p -> progress.line("removed the state of a run that was killed: " + p));
        Path state = RunStates.create(tmp);
        Reliability.Report report;
        try {
            SandboxConfig config = SandboxConfig.builder().bootTimeout(Duration.ofMinutes(6))
                    .requestTimeout(Duration.ofMinutes(3)).build();
            report = new Reliability(() -> QemuVmBackend.builder().imageDir(imageRoot), state, config, progress::line)
                    .run(new Reliability.Options(boots, renders, load, callers, 10, faults, serve,
                            Math.max(1, serveClients)));
        } finally {
            progress.done();
            FileTrees.delete(state);
        }
        String host = System.getProperty("os.name") + " " + System.getProperty("os.arch") + ", "
                + Runtime.getRuntime().availableProcessors() + " cores";
        String command = "qvm reliability --boots " + boots + " --renders " + renders + " --load " + load
                + " --callers " + callers + " --faults " + faults + " --serve " + serve + " --serve-clients "
                + serveClients;
        ReliabilityReport.write(report, host, command, outDir);
        PrintWriter o = spec.commandLine().getOut();
        if (json.enabled()) {
            o.println(Output.JSON.writeValueAsString(ReliabilityReport.json(report, host)));
        } else {
            o.println(Files.readString(outDir.resolve("reliability.md")));
            o.println("raw results: " + outDir.resolve("reliability.json"));
        }
        return report.allHeld() ? ExitCode.OK.code() : ExitCode.ERROR.code();
    }
}
