package io.qvm.cli;

import io.qvm.protocol.image.Arch;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/** {@code qvm image build|verify|info}, through the {@link ImageTool}. */
@Command(name = "image", description = "Build, verify or describe the guest image (kernel + initramfs).",
        subcommands = {ImageCommand.Build.class, ImageCommand.Verify.class, ImageCommand.Info.class})
final class ImageCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "missing subcommand: build, verify or info");
    }

    static final String JSON_FOOTER_1 = "JSON (--json), schema qvm.image/1:";
    static final String JSON_FOOTER_2 = "  {\"schema\":\"qvm.image/1\", \"action\", \"tool\", \"arch\", \"dir\", \"ok\", \"problems\":[...],";
    static final String JSON_FOOTER_3 = "   \"kernelVersion\", \"files\":[{\"name\", \"size\", \"sha256\"}], \"buildMillis\", \"manifest\":{...}}";

    /** What the three subcommands share. */
    abstract static class Action implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        JsonOption json;

        @Option(names = "--arch", paramLabel = "x86_64|aarch64", converter = ArchConverter.class,
                description = "Guest architecture (default: this host's).")
        Arch arch;

        @Option(names = {"--out", "--image-dir"}, paramLabel = "DIR",
                description = "Image root, holding one directory per architecture (default: $QVM_IMAGE_DIR or out/image).")
        Path out;

        final CliContext ctx;

        Action(CliContext ctx) {
            this.ctx = ctx;
        }

        /** The subcommand's name: {@code build}, {@code verify} or {@code info}. */
        String action() {
            return spec.name();
        }

        abstract ImageTool.Report run(ImageTool tool, Arch a, Path root, Progress progress);

        @Override
        public Integer call() {
            ImageTool tool = ctx.imageTool();
            Arch a = arch != null ? arch : Arch.fromOsArch(System.getProperty("os.arch", "")).orElseThrow(() ->
                    new CliException(ExitCode.USAGE, "unsupported host architecture; give --arch"));
            Path root = ctx.imageRoot(out);
            Progress progress = new Progress(spec.commandLine().getErr(), ctx.interactive() && !json.enabled());
            ImageTool.Report r;
            try {
                r = run(tool, a, root, progress);
            } catch (CliException e) {
                throw e;
            } catch (RuntimeException e) {
                throw new CliException(ExitCode.IMAGE, "IMAGE_BUILD_FAILED", "image " + action() + " failed: "
                        + e.getMessage(), null, e);
            } finally {
                progress.done();
            }
            Output.emit(spec.commandLine().getOut(), new ImageReport("qvm.image/1", action(), tool.name(), r.arch(),
                    r.dir(), r.ok(), r.problems(), r.kernelVersion(), r.files(), r.buildMillis(), r.manifest()),
                    json.enabled());
            return r.ok() ? ExitCode.OK.code() : ExitCode.IMAGE.code();
        }
    }

    @Command(name = "build", description = "Build the guest image from the pinned packages (reused when its inputs did not change).",
            footer = {"", JSON_FOOTER_1, JSON_FOOTER_2, JSON_FOOTER_3})
    static final class Build extends Action {
        Build(CliContext ctx) {
            super(ctx);
        }

        @Override
        ImageTool.Report run(ImageTool tool, Arch a, Path root, Progress progress) {
            return tool.build(a, root, progress::line);
        }
    }

    @Command(name = "verify", description = "Check the image's files against SHA256SUMS and manifest.json; exit 8 if they do not match.",
            footer = {"", JSON_FOOTER_1, JSON_FOOTER_2, JSON_FOOTER_3})
    static class Verify extends Action {
        Verify(CliContext ctx) {
            super(ctx);
        }

        @Override
        ImageTool.Report run(ImageTool tool, Arch a, Path root, Progress progress) {
            return tool.verify(a, root);
        }
    }

    @Command(name = "info", description = "Describe the image: kernel, files, sizes, hashes.",
            footer = {"", JSON_FOOTER_1, JSON_FOOTER_2, JSON_FOOTER_3})
    static final class Info extends Verify {
        Info(CliContext ctx) {
            super(ctx);
        }
    }

    static final class ArchConverter implements ITypeConverter<Arch> {
        @Override
        public Arch convert(String value) {
            return Arch.fromOsArch(value.toLowerCase(Locale.ROOT))
                    .orElseThrow(() -> new TypeConversionException("'" + value + "' is not x86_64 or aarch64"));
        }
    }

    /** {@code qvm image …} — schema {@code qvm.image/1}. */
    record ImageReport(String schema, String action, String tool, String arch, String dir, boolean ok,
            List<String> problems, String kernelVersion, List<ImageTool.ImageFile> files, long buildMillis,
            io.qvm.protocol.image.ImageManifest manifest) implements Report {

        @Override
        public void printText(PrintWriter out) {
            out.println(arch + ": " + dir + (ok ? " (verified)" : " (DOES NOT VERIFY)")
                    + (kernelVersion == null ? "" : ", kernel " + kernelVersion)
                    + (buildMillis > 0 ? String.format(Locale.ROOT, ", built in %.1f s", buildMillis / 1000.0) : ""));
            files.forEach(f -> out.printf("  %-20s %12d bytes  sha256 %s%n", f.name(), f.size(), f.sha256()));
            problems.forEach(p -> out.println("  problem: " + p));
        }
    }
}
