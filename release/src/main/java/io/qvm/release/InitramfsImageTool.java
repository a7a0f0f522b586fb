package io.qvm.release;

import com.fasterxml.jackson.databind.JsonNode;
import io.qvm.backend.image.ImageTool;
import io.qvm.backend.probe.Arch;
import io.qvm.image.ImageBuilder;
import io.qvm.image.ImageException;
import io.qvm.image.ImageInfo;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The {@link ImageTool} the {@code qvm} CLI finds through {@link java.util.ServiceLoader}: the real
 * image builder of {@code initramfs-build}. It lives in the distribution module so that the
 * backend library does not depend on the image builder (nor the builder on the backend).
 */
public final class InitramfsImageTool implements ImageTool {

    @Override
    public String name() {
        return "initramfs-build";
    }

    /** Builds the image, or reuses it when the manifest shows the same inputs (lock, worker jar, JRE). */
    @Override
    public Report build(Arch arch, Path outDir, Consumer<String> progress) {
        ImageBuilder builder = ImageBuilder.builder().arch(imageArch(arch)).outDir(outDir).progress(progress).build();
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
        Report v = info(arch, outDir);
        return new Report(v.arch(), v.dir(), v.ok(), v.problems(), kernel != null ? kernel : v.kernelVersion(),
                v.files(), millis, v.manifest());
    }

    @Override
    public Report verify(Arch arch, Path outDir) {
        return info(arch, outDir);
    }

    @Override
    public Report info(Arch arch, Path outDir) {
        Path dir = outDir.resolve(arch.qemuName()).toAbsolutePath();
        ImageInfo info;
        try {
            info = ImageInfo.read(outDir, imageArch(arch));
        } catch (ImageException e) {
            return new Report(arch.qemuName(), dir.toString(), false, List.of(e.getMessage()), null, List.of(), 0,
                    null);
        }
        List<ImageFile> files = new ArrayList<>();
        for (JsonNode o : info.manifest().path("outputs")) {
            files.add(new ImageFile(o.path("name").asText(), o.path("size").asLong(), o.path("sha256").asText()));
        }
        JsonNode k = info.manifest().path("kernel").path("version");
        return new Report(arch.qemuName(), dir.toString(), info.ok(), info.problems(), k.isTextual() ? k.asText() : null,
                files, 0, info.manifest());
    }

    private static io.qvm.image.Arch imageArch(Arch a) {
        return io.qvm.image.Arch.parse(a.qemuName());
    }
}
