package io.qvm.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.bench.Bench;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.FileTrees;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code qvm bench}: the performance figures of issue #8, measured on this host (see {@link Bench}). */
@Command(name = "bench", description = "Measure cold boot, template build, restore, pool acquire, round trip, throughput, "
        + "render latency five ways and memory per clone on this host; write bench.json and bench.md.",
        footer = {"", "Takes about 5-10 minutes under TCG. JSON (--json): the contents of bench.json, schema qvm.bench/1."})
final class BenchCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Option(names = "--out", paramLabel = "DIR", description = "Where bench.json and bench.md go (default out/bench).")
    Path out;

    @Option(names = "--renders", paramLabel = "N", description = "Samples per render way (default 20).")
    int renders = 20;

    @Option(names = "--clones", paramLabel = "N", description = "Clones started at once for the memory figure (default 16).")
    int clones = 16;

    @Option(names = "--arch", paramLabel = "x86_64|aarch64", converter = ImageCommand.ArchConverter.class,
            description = "The guest architecture (default: the host's). Another than the host's runs under TCG and "
                    + "measures cold boot, template build, restore and the in-sandbox render ways only.")
    Arch arch;

    @Option(names = "--worker-jar", paramLabel = "JAR",
            description = "The worker jar for the host-JVM, JVM-per-request and runsc ways (default: the checkout's "
                    + "renderer-worker/target/renderer-worker.jar; those ways are skipped without it).")
    Path workerJar;

    private final CliContext ctx;

    BenchCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        Path imageRoot = ctx.imageRoot(dirs.imageDir);
        Path outDir = out != null ? out : imageRoot.getParent().resolve("bench");
        Path jar = workerJar != null ? workerJar : imageRoot.getParent().getParent().resolve("renderer-worker")
                .resolve("target").resolve("renderer-worker.jar");
        Progress progress = new Progress(spec.commandLine().getErr(), ctx.interactive() && !json.enabled());
        MissingImage.buildIfMissing(ctx, imageRoot, arch != null ? arch
                : Arch.fromOsArch(System.getProperty("os.arch", "")).orElse(null), progress);
        Path work = Files.createTempDirectory("qvm-bench-");
        ObjectNode results;
        try {
            results = Bench.run(new Bench.Options(imageRoot, ctx.stateRoot(dirs.stateDir), work,
                    Files.isRegularFile(jar) ? jar : null, renders, clones, progress::line, arch, outDir));
            Bench.write(results, outDir);
        } finally {
            progress.done();
            FileTrees.delete(work);
        }
        PrintWriter o = spec.commandLine().getOut();
        if (json.enabled()) {
            o.println(Output.JSON.writeValueAsString(results));
        } else {
            o.println(Files.readString(outDir.resolve("bench.md")));
            o.println("raw results: " + outDir.resolve("bench.json"));
        }
        return ExitCode.OK.code();
    }
}
