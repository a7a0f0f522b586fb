package io.qvm.cli;

import io.qvm.protocol.image.Arch;
import io.qvm.image.ImageBuilder;
import io.qvm.image.ImageException;
import io.qvm.image.ImageInfo;
import io.qvm.protocol.image.ImageManifest;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** The real {@link ImageTool}: the image builder of module {@code initramfs-build}. */
public final class BuilderImageTool implements ImageTool {

    @Override
    public String name() {
        return "initramfs-build";
    }

    /** Builds the image, or reuses it when the manifest shows the same inputs (lock, worker jar, JRE). */
    @Override
    public Report build(Arch arch, Path outDir, Consumer<String> progress) {
        ImageBuilder builder = ImageBuilder.builder().arch(arch).outDir(outDir).progress(progress).build();
        long millis = 0;
        String kernel = null;
        if (builder.upToDate()) {
            progress.accept("the image at " + outDir.resolve(arch.qemuName()) + " is up to date (same pinned inputs, "
                    + "worker jar and JRE); nothing to build");
        } else {
            ImageBuilder.Result r = builder.run();
            millis = r.millis();
            kernel = r.kernelVersion();
        }
        Report v = verify(arch, outDir);
        return new Report(v.arch(), v.dir(), v.ok(), v.problems(), kernel != null ? kernel : v.kernelVersion(),
                v.files(), millis, v.manifest());
    }

    @Override
    public Report verify(Arch arch, Path outDir) {
        Path dir = outDir.resolve(arch.qemuName()).toAbsolutePath();
        ImageInfo info;
        try {
            info = ImageInfo.read(outDir, arch);
        } catch (ImageException e) {
            return new Report(arch.qemuName(), dir.toString(), false, List.of(e.getMessage()), null, List.of(), 0,
                    null);
        }
        List<ImageFile> files = new ArrayList<>();
        for (ImageManifest.Output o : info.manifest().outputFiles()) {
            files.add(new ImageFile(o.name(), o.size(), o.sha256()));
        }
        return new Report(arch.qemuName(), dir.toString(), info.ok(), info.problems(),
                info.manifest().kernelVersion().orElse(null), files, 0, info.manifest());
    }

}
