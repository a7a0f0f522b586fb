package io.qvm.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** {@code --state-dir} and {@code --image-dir}, for the commands that touch sandboxes or the image. */
public final class DirOptions {

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "qvm's state directory (default: $QVM_STATE or ~/.local/state/qvm).")
    Path stateDir;

    @Option(names = "--image-dir", paramLabel = "DIR",
            description = "The directory holding one guest image per architecture (default: $QVM_IMAGE_DIR or out/image).")
    Path imageDir;

    /** The options as arguments, to hand to a child process. */
    List<String> toArgs(CliContext ctx) {
        List<String> a = new ArrayList<>();
        a.add("--state-dir");
        a.add(ctx.stateRoot(stateDir).toString());
        a.add("--image-dir");
        a.add(ctx.imageRoot(imageDir).toString());
        return a;
    }
}
