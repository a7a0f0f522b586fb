package io.qvm.cli;

import io.qvm.admin.GuestImages;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.util.List;

/**
 * "Builds what is missing": before a command boots a sandbox, a guest image that is absent or
 * fails its checksums is built with the image tool on the class path, with its progress shown.
 * Without an image tool (the library used on its own), the original {@link ImageException} stands.
 */
final class MissingImage {

    private MissingImage() {
    }

    static void buildIfMissing(CliContext ctx, Path imageRoot, Progress progress) {
        buildIfMissing(ctx, imageRoot, Arch.fromOsArch(System.getProperty("os.arch", "")).orElse(null), progress);
    }

    /** {@link #buildIfMissing(CliContext, Path, Progress)} for {@code arch} (null: the host's, unsupported). */
    static void buildIfMissing(CliContext ctx, Path imageRoot, Arch arch, Progress progress) {
        if (arch == null) {
            return; // the backend reports the unsupported host with its own typed error
        }
        try {
            GuestImages.verify(imageRoot, arch);
            return;
        } catch (HostSetupException missing) {
            progress.line("guest image: " + firstLine(missing.getMessage()));
            progress.line("building the guest image for " + arch.qemuName() + " (the first build downloads the pinned "
                    + "Debian packages and takes a few minutes)");
            ImageTool.Report r = ctx.imageTool().build(arch, imageRoot, progress::line);
            if (!r.ok()) {
                throw new CliException(ExitCode.IMAGE, "IMAGE_BUILD_FAILED", "the guest image build did not verify: "
                        + String.join("; ", r.problems()), "run ./qvm image build --arch " + arch.id()
                        + " and read its output", null);
            }
            progress.line("guest image ready at " + r.dir());
        }
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
