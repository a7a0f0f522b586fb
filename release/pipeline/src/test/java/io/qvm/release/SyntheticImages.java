package io.qvm.release;

import io.qvm.image.InitramfsArchive;
import io.qvm.image.OciConfig;
import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.image.ImageManifest;
import io.qvm.protocol.util.FileTrees;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * An {@link ImageFactory} for tests: in milliseconds it builds an image directory with the real
 * layout — a real LZ4-compressed cpio initramfs (written by initramfs-build's {@link InitramfsArchive})
 * holding a worker jar with its BOM at the real path, a manifest naming the lock's packages,
 * {@code SHA256SUMS} — and extracted package trees whose copyright files are DEP-5 (busybox-static's
 * is free-form, libgcc-s1's doc directory is a symlink to gcc-12-base's, as in Debian).
 * Deterministic unless told {@link #varying}; {@link #broken} writes a wrong hash into SHA256SUMS.
 */
public final class SyntheticImages implements ImageFactory {

    private final PackageLock lock;
    private final Set<Arch> varying = EnumSet.noneOf(Arch.class);
    private final Set<Arch> broken = EnumSet.noneOf(Arch.class);
    private final AtomicInteger builds = new AtomicInteger();
    private final List<Path> caches = new ArrayList<>();
    private byte[] workerJar = WorkerBoms.jar(WorkerBoms.bom(false));

    public SyntheticImages(PackageLock lock) {
        this.lock = lock;
    }

    /** Every build of {@code arch} writes a different build id into its initramfs. */
    public SyntheticImages varying(Arch arch) {
        varying.add(arch);
        return this;
    }

    /** {@code arch}'s SHA256SUMS lists a wrong hash for vmlinuz. */
    public SyntheticImages broken(Arch arch) {
        broken.add(arch);
        return this;
    }

    public SyntheticImages workerJar(byte[] jar) {
        this.workerJar = jar.clone();
        return this;
    }

    /** How many images were built. */
    public int builds() {
        return builds.get();
    }

    /** The package caches builds were given, in order. */
    public List<Path> caches() {
        return List.copyOf(caches);
    }

    @Override
    public Path build(Arch arch, Path outDir, Path cache, Consumer<String> progress) {
        int n = builds.incrementAndGet();
        caches.add(cache);
        progress.accept("synthetic build " + n + " of " + arch);
        Path dir = outDir.resolve(arch.id());
        Path stage = outDir.resolve("." + arch.id() + "-stage");
        try {
            Files.createDirectories(dir);
            Path jar = stage.resolve("bundle/rootfs" + OciConfig.WORKER_JAR);
            Files.createDirectories(jar.getParent());
            Files.write(jar, workerJar);
            Files.writeString(stage.resolve("init"), "#!/bin/sh\necho synthetic " + arch + "\n");
            Files.createDirectories(stage.resolve("etc"));
            Files.writeString(stage.resolve("etc/build-id"), varying.contains(arch) ? "build " + n : "same");
            InitramfsArchive.write(stage, dir.resolve(ImageDirectory.INITRAMFS), 0);
            Files.writeString(dir.resolve(ImageDirectory.KERNEL), "synthetic kernel for " + arch);
            List<ImageManifest.Input> inputs = lock.entries(arch).stream().map(e -> new ImageManifest.Input(e.name(),
                    e.role().id(), e.suite(), e.version(), e.architecture(), e.sha256())).toList();
            List<ImageManifest.Output> outputs = new ArrayList<>();
            for (String f : List.of(ImageDirectory.INITRAMFS, ImageDirectory.KERNEL)) {
                outputs.add(new ImageManifest.Output(f, Sha256.of(dir.resolve(f)), Files.size(dir.resolve(f))));
            }
            new ImageManifest(ImageManifest.FORMAT, arch.id(), arch.debian(), arch.console(),
                    new ImageManifest.Kernel("6.1.0-synthetic", "linux-image-synthetic", List.of()), null, null, true,
                    new ImageManifest.WorkerJar(OciConfig.WORKER_JAR, Sha256.of(workerJar), workerJar.length), null, 0,
                    inputs, outputs, null, null, true).write(dir.resolve(ImageDirectory.MANIFEST));
            StringBuilder sums = new StringBuilder();
            for (String f : ImageDirectory.FILES) {
                String h = broken.contains(arch) && f.equals(ImageDirectory.KERNEL) ? "0".repeat(64)
                        : Sha256.of(dir.resolve(f));
                sums.append(h).append("  ").append(f).append('\n');
            }
            Files.writeString(dir.resolve(ImageDirectory.SHA256SUMS), sums, StandardCharsets.UTF_8);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            FileTrees.deleteQuietly(stage);
        }
    }

    @Override
    public void seed(Arch arch, Path cache, Path fresh, Consumer<String> progress) {
        try {
            Files.createDirectories(fresh.resolve("debs"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public Path extracted(Arch arch, PackageLock.Entry entry, Path cache) {
        Path root = cache.resolve("extracted").resolve(entry.sha256());
        Path doc = root.resolve("usr/share/doc").resolve(entry.name());
        try {
            if (Files.exists(doc, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                return root;
            }
            Files.createDirectories(doc.getParent());
            if (entry.name().equals("libgcc-s1")) {
                Files.createSymbolicLink(doc, Path.of("gcc-12-base"));
                return root;
            }
            Files.createDirectories(doc);
            Files.writeString(doc.resolve("copyright"), copyright(entry.name()));
            return root;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What the synthetic copyright file of {@code name} says: DEP-5 with two licences, or free form. */
    public static String copyright(String name) {
        if (name.equals("busybox-static")) {
            return "This package was debianized by someone.\nIt is licensed under the GPL.\n";
        }
        return "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: " + name
                + "\n\nFiles: *\nCopyright: someone\nLicense: " + name + "-licence\n text of it\n\nFiles: debian/*\n"
                + "Copyright: Debian\nLicense: GPL-2+\n\nLicense: GPL-2+\n the GPL\n";
    }
}
