package io.qvm.release;

import io.qvm.image.ImageBuilder;
import io.qvm.image.PackageLock;
import io.qvm.image.PackageStore;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The real {@link ImageFactory}: {@link ImageBuilder} (always a full build: {@code run()}, never
 * its {@code upToDate()} shortcut) and {@link PackageStore} over the given cache.
 */
public final class BuilderImages implements ImageFactory {

    private final PackageLock lock;
    private final Path workerJar;

    /**
     * @param lock the lock the images are built from
     * @param workerJar the worker jar that goes into them
     */
    public BuilderImages(PackageLock lock, Path workerJar) {
        this.lock = Objects.requireNonNull(lock, "lock");
        this.workerJar = Objects.requireNonNull(workerJar, "workerJar");
    }

    @Override
    public Path build(Arch arch, Path outDir, Path cache, Consumer<String> progress) {
        return ImageBuilder.builder().arch(arch).outDir(outDir).cache(cache).lock(lock).workerJar(workerJar)
                .progress(progress).build().run().dir();
    }

    @Override
    public void seed(Arch arch, Path cache, Path fresh, Consumer<String> progress) {
        PackageStore store = new PackageStore(cache, progress);
        Path debs = fresh.resolve("debs");
        try {
            Files.createDirectories(debs);
            for (PackageLock.Entry e : lock.entries(arch)) {
                Path deb = store.deb(arch, e);
                Path target = debs.resolve(deb.getFileName());
                if (!Files.exists(target)) {
                    try {
                        Files.createLink(target, deb);
                    } catch (FileSystemException | UnsupportedOperationException crossDevice) {
                        Files.copy(deb, target);
                    }
                }
            }
        } catch (IOException e) {
            throw new ReleaseException("cannot seed the package cache " + fresh + " from " + cache + ": " + e, e);
        }
    }

    @Override
    public Path extracted(Arch arch, PackageLock.Entry entry, Path cache) {
        return new PackageStore(cache, line -> { }).extracted(arch, entry);
    }
}
