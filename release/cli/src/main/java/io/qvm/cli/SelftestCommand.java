package io.qvm.cli;

import io.qvm.admin.HostReport;
import io.qvm.protocol.image.Arch;
import io.qvm.release.HostGate;
import io.qvm.release.Selftest;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code qvm selftest}: this host proven end to end, with a report to attach to a bug (see {@link Selftest}). */
@Command(name = "selftest", sortOptions = false,
        description = {"Prove this host end to end with the release gate's own steps: probe, cold boot, handshake, "
                + "SVG and PDF rendered, every hostile document refused, a template, two clones at once with their "
                + "own randomness and the host's clock, stop, nothing left behind. Writes a report (host, QEMU build "
                + "and its SHA-256, accelerator, image hashes, each step's evidence) to attach to a bug report.",
            "Takes a few minutes with KVM/HVF/WHPX, 5-15 minutes under TCG. Exit status 10 when a step failed."},
        footer = {"", "JSON (--json), schema qvm.selftest/1: {\"schema\", \"ok\", \"verdict\", \"started\", \"qvmVersion\",",
            "  \"host\":{\"osName\", \"osVersion\", \"arch\", \"cpus\", \"maxHeapBytes\", \"java\", \"javaVendor\"},",
            "  \"qemu\":{\"binary\", \"version\", \"sha256\", \"compiledIn\", \"problem\"}, \"accelerator\", \"machine\",",
            "  \"image\":{\"arch\", \"dir\", \"files\":{name: sha256}, \"problem\"}, \"suite\":\"full|short\",",
            "  \"steps\":[{\"name\", \"ok\", \"millis\", \"evidence\"}], \"boots\":[{\"arch\", \"accelerator\", \"machine\",",
            "  \"phases\":[{\"name\", \"millis\"}], \"readyMillis\"}]}"})
final class SelftestCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Option(names = "--arch", paramLabel = "x86_64|aarch64", converter = ImageCommand.ArchConverter.class,
            description = "The guest architecture to prove (default: the host's). Another architecture than the host's "
                    + "runs under TCG with the short suite (no corpus; a template and two clones included) unless --full.")
    Arch arch;

    @Option(names = "--full", description = "The whole suite (corpus, template, two clones) for another architecture too.")
    boolean full;

    @Option(names = "--report", paramLabel = "DIR", description = "Also write selftest.json and selftest.md there.")
    Path reportDir;

    private final CliContext ctx;

    SelftestCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws IOException {
        Arch target = arch != null ? arch : Arch.fromOsArch(System.getProperty("os.arch", "")).orElseThrow(() ->
                new CliException(ExitCode.USAGE, "unsupported host architecture " + System.getProperty("os.arch")
                        + "; give --arch"));
        Path imageRoot = ctx.imageRoot(dirs.imageDir);
        Progress progress = new Progress(spec.commandLine().getErr(), ctx.interactive() && !json.enabled());
        boolean native_ = target == Arch.fromOsArch(System.getProperty("os.arch", "")).orElse(null);
        if (native_) {
            MissingImage.buildIfMissing(ctx, imageRoot, progress);
        }
        Selftest.Report report;
        try {
            HostGate.Options gate = HostGate.Options.defaults()
                    .withBackends(() -> ctx.backend(dirs, progress::line));
            report = new Selftest(gate, HostReport::findQemu).run(imageRoot, target, full || native_, progress::line);
        } finally {
            progress.done();
        }
        if (reportDir != null) {
            Files.createDirectories(reportDir);
            Files.writeString(reportDir.resolve("selftest.json"), Output.JSON.writerWithDefaultPrettyPrinter()
                    .writeValueAsString(report) + "\n", StandardCharsets.UTF_8);
            StringWriter md = new StringWriter();
            report.printMarkdown(new PrintWriter(md));
            Files.writeString(reportDir.resolve("selftest.md"), md.toString(), StandardCharsets.UTF_8);
        }
        PrintWriter o = spec.commandLine().getOut();
        if (json.enabled()) {
            o.println(Output.JSON.writeValueAsString(report));
        } else {
            report.printMarkdown(o);
            if (reportDir != null) {
                o.println();
                o.println("report: " + reportDir.resolve("selftest.md") + " and " + reportDir.resolve("selftest.json"));
            }
        }
        o.flush();
        return report.ok() ? ExitCode.OK.code() : ExitCode.SELFTEST_FAILED.code();
    }
}
