package io.qvm.cli;

import io.qvm.QemuVmBackend;
import io.qvm.image.PackageLock;
import io.qvm.release.BuilderImages;
import io.qvm.release.HostGate;
import io.qvm.release.ImageFactory;
import io.qvm.release.ReleaseGate;
import java.nio.file.Path;

/**
 * What {@code qvm release} builds images with and proves them by: {@link #system()} is the image
 * builder and the {@link HostGate} on this host's QEMU; the CLI's tests give the command a
 * synthetic image build and a gate of their own.
 */
public interface ReleaseTools {

    /** The image build for {@code lock} and {@code workerJar}. */
    ImageFactory images(PackageLock lock, Path workerJar);

    /** The gate, with the backends this CLI would use (QEMU's user from the environment). */
    ReleaseGate gate(CliContext ctx);

    /** The real ones. */
    static ReleaseTools system() {
        return new ReleaseTools() {
            @Override
            public ImageFactory images(PackageLock lock, Path workerJar) {
                return new BuilderImages(lock, workerJar);
            }

            @Override
            public ReleaseGate gate(CliContext ctx) {
                return new HostGate(HostGate.Options.defaults().withBackends(
                        () -> QemuVmBackend.builder().environment(ctx.env())));
            }
        };
    }
}
