package io.qvm.release;

import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * What a release needs of the image build: build one architecture from a package cache, seed a
 * fresh cache for the second (reproducibility) build, and an extracted package's files (its
 * copyright). {@link BuilderImages} is the real one ({@code ImageBuilder} and {@code PackageStore}
 * of initramfs-build).
 */
public interface ImageFactory {

    /**
     * Builds {@code arch}'s image into {@code outDir/<arch>/}, taking packages from {@code cache}
     * (fetching what it lacks). Always builds: never reuses an image already there.
     *
     * @return the image directory
     */
    Path build(Arch arch, Path outDir, Path cache, Consumer<String> progress);

    /**
     * Prepares {@code fresh} as a package cache holding nothing but {@code arch}'s verified .deb
     * files from {@code cache}: a build from it extracts every package again, so that the second
     * build shares nothing with the first but the pinned bytes.
     */
    void seed(Arch arch, Path cache, Path fresh, Consumer<String> progress);

    /** The extracted tree of a pinned package in {@code cache} (for its {@code usr/share/doc}). */
    Path extracted(Arch arch, PackageLock.Entry entry, Path cache);
}
