package io.qvm.image;

import io.qvm.image.PackageLock.Entry;
import io.qvm.image.PackageLock.Role;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.image.ImageManifest;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Builds one guest image: pinned packages → {@code <out>/<arch>/} with exactly {@code vmlinuz},
 * {@code initramfs.cpio.lz4}, {@code manifest.json} and {@code SHA256SUMS} (docs/CONTRACTS.md).
 *
 * <pre>
 * ImageBuilder.Result r = ImageBuilder.builder()
 *         .arch(Arch.X86_64)
 *         .outDir(Path.of("out/image"))
 *         .workerJar(Path.of("renderer-worker/target/renderer-worker.jar"))
 *         .progress(line -&gt; System.err.println("[image] " + line))
 *         .build()
 *         .run();
 * </pre>
 *
 * <p>The same lock and worker jar give a bit-identical {@code initramfs.cpio.lz4} on any host with
 * a JDK 17 jlink (no apt, dpkg or /etc/apt needed: {@link PackageStore}; jlink's deflate stream comes
 * from the JDK's zlib, see adr/0010 for the one caveat): every
 * input is pinned by hash, archive entries are sorted with fixed metadata (see
 * {@link CpioWriter}), and nothing time- or host-dependent is written (the mtime is
 * {@code SOURCE_DATE_EPOCH}, default 0).
 */
public final class ImageBuilder {
    public static final String VMLINUZ = ImageDirectory.KERNEL;
    public static final String INITRAMFS = ImageDirectory.INITRAMFS;
    public static final String MANIFEST = ImageDirectory.MANIFEST;
    public static final String SHA256SUMS = ImageDirectory.SHA256SUMS;

    private final Arch arch;
    private final Path outDir;
    private final Path workerJar;
    private final PackageLock lock;
    private final WorkerLock workerLock;
    private final PackageStore store;
    private final List<String> jreModules;
    private final WorkerLimits limits;
    private final long mtime;
    private final boolean cds;
    private final Consumer<String> progress;

    /** What a build produced. */
    public record Result(Arch arch, Path dir, String kernelVersion, Map<String, Long> sizes,
            Map<String, String> sha256, long millis, ImageManifest manifest) {
    }

    private ImageBuilder(Builder b) {
        this.arch = b.arch;
        this.outDir = b.outDir;
        this.workerJar = b.workerJar;
        this.lock = b.lock != null ? b.lock : PackageLock.bundled();
        this.workerLock = b.workerLock != null ? b.workerLock : WorkerLock.bundled();
        this.progress = b.progress;
        this.store = new PackageStore(b.cache, b.progress, b.etcApt, b.environment);
        this.jreModules = b.jreModules;
        this.limits = b.limits;
        this.mtime = b.mtime;
        this.cds = b.cds;
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * True if {@code <out>/<arch>/} already holds the image this builder would produce: its files
     * match SHA256SUMS and its manifest names the same pinned packages, worker jar, JRE modules,
     * jlink runtime, fixed limits and mtime. Lets a caller skip a rebuild; cheap (hashes only).
     */
    public boolean upToDate() {
        ImageInfo info;
        try {
            info = ImageInfo.read(outDir, arch);
        } catch (ImageException e) {
            return false;
        }
        if (!info.ok() || !Files.isRegularFile(workerJar)) {
            return false;
        }
        ImageManifest m = info.manifest();
        if (m.inputs() == null || m.jre() == null || m.workerJar() == null || m.fixedLimits() == null) {
            return false;
        }
        List<String> want = new ArrayList<>();
        for (Entry e : lock.entries(arch)) {
            want.add(e.name() + " " + e.version() + " " + e.sha256());
        }
        List<String> have = new ArrayList<>();
        m.inputs().forEach(i -> have.add(i.name() + " " + i.version() + " " + i.sha256()));
        return want.equals(have)
                && Sha256.of(workerJar).equals(m.workerJar().sha256())
                && workerJarMatchesItsLock()
                && jreModules.stream().sorted().toList().equals(m.jre().modules())
                && String.valueOf(JreLinker.FEATURE).equals(m.jre().jlinkRuntime())
                && m.fixedLimits().rlimitNofile() == limits.nofile()
                && m.fixedLimits().rlimitNproc() == limits.nproc()
                && m.sourceDateEpoch() == mtime
                && m.jre().cds() == cds
                && recipe().equals(m.recipeSha256());
    }

    private boolean workerJarMatchesItsLock() {
        try {
            return workerLock.differences(WorkerLock.ofJar(workerJar)).isEmpty();
        } catch (ImageException e) {
            return false;
        }
    }

    /**
     * Runs the build.
     *
     * @throws ImageException a step failed; among them a worker jar whose Maven dependencies are
     *     not the ones {@link WorkerLock} pins (each difference named)
     */
    public Result run() {
        long start = System.nanoTime();
        workerLock.check(workerJar);
        progress.accept("worker jar " + workerJar.getFileName() + ": its " + workerLock.artifacts().size()
                + " Maven dependencies match " + WorkerLock.SOURCE_PATH);
        try {
            return doRun(start);
        } catch (IOException e) {
            throw new ImageException("image build for " + arch + " failed: " + e, e);
        }
    }

    private Result doRun(long start) throws IOException {
        List<Entry> entries = lock.entries(arch);
        progress.accept("building the " + arch + " image from " + entries.size()
                + " pinned packages into " + outDir.resolve(arch.id()));
        Map<Entry, Path> roots = new LinkedHashMap<>();
        for (Entry e : entries) {
            roots.put(e, store.extracted(arch, e));
        }
        Entry kernelPkg = lock.one(arch, Role.KERNEL);
        Entry busyboxPkg = lock.one(arch, Role.BUSYBOX);
        Entry runscPkg = lock.one(arch, Role.RUNSC);
        Entry jdkPkg = lock.one(arch, Role.JDK);
        Entry fontsPkg = lock.one(arch, Role.FONTS);
        Entry perlPkg = lock.one(arch, Role.PERL);
        Path kernelRoot = roots.get(kernelPkg);
        String kver = KernelModules.version(kernelRoot);

        Files.createDirectories(store.cache().resolve("work"));
        Path work = Files.createTempDirectory(store.cache().resolve("work"), arch.id() + "-");
        try {
            Path stage = work.resolve("initramfs");
            Files.createDirectories(stage);
            for (String d : new String[] {"bin", "proc", "sys", "dev", "run", "tmp", "usr/bin"}) {
                Files.createDirectories(stage.resolve(d));
            }

            // bundle
            progress.accept("linking the JRE (" + String.join(",", jreModules) + ") from "
                    + jdkPkg.name() + " " + jdkPkg.version());
            Path jmods = jdkPkg.name().startsWith("openjdk-17")
                    ? roots.get(jdkPkg).resolve("usr/lib/jvm/java-17-openjdk-" + arch.debian() + "/jmods")
                    : null;
            List<Path> libRoots = new ArrayList<>();
            lock.withRole(arch, Role.LIBRARY).forEach(e -> libRoots.add(roots.get(e)));
            BundleBuilder.Result bundle = BundleBuilder.build(new BundleBuilder.Inputs(arch,
                    Objects.requireNonNull(jmods), libRoots, roots.get(fontsPkg), workerJar,
                    jreModules, limits, cds), stage.resolve("bundle"));
            progress.accept("bundle: JRE + " + bundle.libraries().size() + " libraries, "
                    + PackageStore.mib(Trees.size(stage.resolve("bundle"))));

            // busybox and its applets
            Path busybox = find(roots.get(busyboxPkg), "busybox", busyboxPkg);
            Files.copy(busybox, stage.resolve("bin/busybox"));
            for (String applet : InitScript.APPLETS) {
                Files.createSymbolicLink(stage.resolve("bin").resolve(applet), Path.of("busybox"));
            }
            // runsc
            Path runsc = find(roots.get(runscPkg), "runsc", runscPkg);
            checkStaticElf(runsc, runscPkg);
            checkStaticElf(busybox, busyboxPkg);
            Files.copy(runsc, stage.resolve("usr/bin/runsc"));
            // perl, for the init's control helper (adr/0012) and stdio relays (adr/0002), with its libraries in the
            // initramfs's own /usr/lib (the bundle's are the sandbox's, not the init's)
            Path perl = find(roots.get(perlPkg), "perl", perlPkg);
            Files.copy(perl, stage.resolve("usr/bin/perl"));
            Map<String, SharedLibraryClosure.Library> perlLibs =
                    new SharedLibraryClosure(arch, libRoots).copyClosure(stage, stage.resolve("usr/bin"));
            progress.accept("perl " + perlPkg.version() + " for the init, with " + perlLibs.keySet());
            // kernel modules
            List<KernelModules.Module> modules =
                    KernelModules.resolve(kernelRoot, kver, KernelModules.WANTED, KernelModules.OPTIONAL);
            Path modBase = kernelRoot.resolve("lib/modules").resolve(kver);
            for (KernelModules.Module m : modules) {
                Path dst = stage.resolve("lib/modules").resolve(kver).resolve(m.path());
                Files.createDirectories(dst.getParent());
                Files.copy(modBase.resolve(m.path()), dst);
            }
            progress.accept("kernel " + kver + ", modules in load order: "
                    + modules.stream().map(KernelModules.Module::name).toList());
            // init
            Path init = stage.resolve("init");
            Files.writeString(init, InitScript.render(kver, modules, runscPkg.version()),
                    StandardCharsets.UTF_8);
            init.toFile().setExecutable(true, false);

            // outputs
            Path building = outDir.resolve("." + arch.id() + ".building");
            FileTrees.delete(building);
            Files.createDirectories(building);
            progress.accept("writing " + INITRAMFS + " (" + PackageStore.mib(Trees.size(stage))
                    + " uncompressed)");
            InitramfsArchive.write(stage, building.resolve(INITRAMFS), mtime);
            Path vmlinuz = kernelRoot.resolve("boot/vmlinuz-" + kver);
            if (!Files.isRegularFile(vmlinuz, LinkOption.NOFOLLOW_LINKS)) {
                throw new ImageException("the kernel package " + kernelPkg.label() + " has no boot/vmlinuz-"
                        + kver);
            }
            Files.copy(vmlinuz, building.resolve(VMLINUZ));

            ImageManifest manifest = manifest(kver, modules, bundle, entries, runscPkg, building);
            manifest.write(building.resolve(MANIFEST));
            Map<String, String> sums = new LinkedHashMap<>();
            Map<String, Long> sizes = new LinkedHashMap<>();
            StringBuilder sb = new StringBuilder();
            for (String f : new String[] {INITRAMFS, MANIFEST, VMLINUZ}) {
                String h = Sha256.of(building.resolve(f));
                sums.put(f, h);
                sizes.put(f, Files.size(building.resolve(f)));
                sb.append(h).append("  ").append(f).append('\n');
            }
            Files.writeString(building.resolve(SHA256SUMS), sb.toString());

            Path finalDir = outDir.resolve(arch.id());
            FileTrees.delete(finalDir);
            Files.move(building, finalDir, StandardCopyOption.ATOMIC_MOVE);
            long ms = (System.nanoTime() - start) / 1_000_000;
            progress.accept("done in " + ms / 1000.0 + " s: " + INITRAMFS + " "
                    + PackageStore.mib(sizes.get(INITRAMFS)) + " sha256 " + sums.get(INITRAMFS));
            return new Result(arch, finalDir, kver, sizes, sums, ms, manifest);
        } finally {
            FileTrees.deleteQuietly(work);
        }
    }

    private ImageManifest manifest(String kver, List<KernelModules.Module> modules,
            BundleBuilder.Result bundle, List<Entry> entries, Entry runscPkg, Path dir) {
        ImageManifest.Kernel kernel = new ImageManifest.Kernel(kver, lock.one(arch, Role.KERNEL).name(),
                modules.stream().map(KernelModules.Module::name).toList());
        ImageManifest.Runsc runsc = new ImageManifest.Runsc(runscPkg.version(), runscPkg.suite(),
                List.of("systrap", "ptrace"), "systrap");
        ImageManifest.Jre jre = new ImageManifest.Jre(jreModules.stream().sorted().toList(),
                // the jlink's feature release, not the host JDK's full version: any 17.0.x jlink
                // links the pinned jmods into the same bytes (adr/0010), and the manifest must not
                // differ by the host that built it
                String.valueOf(JreLinker.FEATURE), cds,
                bundle.jlinkArgs().stream().map(a -> a.startsWith("/") ? Path.of(a).getFileName().toString() : a)
                        .toList(),
                List.copyOf(bundle.libraries().keySet()));
        ImageManifest.WorkerJar worker = new ImageManifest.WorkerJar(OciConfig.WORKER_JAR, Sha256.of(workerJar),
                size(workerJar));
        List<ImageManifest.Input> inputs = entries.stream().map(e -> new ImageManifest.Input(e.name(), e.role().id(),
                e.suite(), e.version(), e.architecture(), e.sha256())).toList();
        List<ImageManifest.Output> outputs = new ArrayList<>();
        for (String f : new String[] {INITRAMFS, VMLINUZ}) {
            Path p = dir.resolve(f);
            outputs.add(new ImageManifest.Output(f, Sha256.of(p), size(p)));
        }
        return new ImageManifest(ImageManifest.FORMAT, arch.id(), arch.debian(), arch.console(), kernel, runsc, jre,
                !cds, worker, new ImageManifest.FixedLimits(limits.nofile(), limits.nproc()), mtime, inputs, outputs,
                null, recipe(), true);
    }

    /**
     * The SHA-256 of what this builder generates itself (not taken from a pinned package): the
     * init, rendered from its template and the guest contract (for no modules and placeholder
     * versions: those come from the lock, which {@link #upToDate} compares on its own), the
     * OCI config template for the fixed limits, and how the initramfs is packed
     * ({@link InitramfsArchive#FORMAT}).
     */
    String recipe() {
        return Sha256.of((InitScript.render("0", List.of(), "0") + "\n" + OciConfig.template(limits) + "\n"
                + InitramfsArchive.FORMAT).getBytes(StandardCharsets.UTF_8));
    }

    private static long size(Path p) {
        try {
            return Files.size(p);
        } catch (IOException e) {
            throw new ImageException("cannot stat " + p + ": " + e, e);
        }
    }

    private static Path find(Path root, String name, Entry pkg) {
        for (String d : new String[] {"bin", "usr/bin", "sbin", "usr/sbin"}) {
            Path p = root.resolve(d).resolve(name);
            // not through a symlink: an absolute target would name a file of the build host
            if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                return p;
            }
        }
        throw new ImageException("package " + pkg.label() + " has no " + name + " in bin, usr/bin, "
                + "sbin or usr/sbin");
    }

    private void checkStaticElf(Path file, Entry pkg) throws IOException {
        ElfFile elf = ElfFile.read(file);
        if (elf.machine() != arch.elfMachine()) {
            throw new ImageException(file.getFileName() + " from " + pkg.label() + " is for ELF machine "
                    + elf.machine() + ", not " + arch);
        }
        if (elf.interpreter().isPresent() || !elf.needed().isEmpty()) {
            throw new ImageException(file.getFileName() + " from " + pkg.label() + " is not static "
                    + "(interpreter " + elf.interpreter().orElse("-") + ", needs " + elf.needed() + ")");
        }
    }

    /** Builder; defaults in one place. */
    public static final class Builder {
        private Arch arch = Arch.X86_64;
        private Path outDir = ImageInfo.defaultOutDir();
        private Path workerJar = ImageInfo.repoRoot().resolve("renderer-worker/target/renderer-worker.jar");
        private PackageLock lock;
        private Path cache = PackageStore.defaultCache();
        private Path etcApt = Path.of("/etc/apt");
        private Map<String, String> environment = System.getenv();
        private WorkerLock workerLock;
        private List<String> jreModules = JreLinker.DEFAULT_MODULES;
        private WorkerLimits limits = WorkerLimits.DEFAULTS;
        private long mtime = sourceDateEpoch();
        private boolean cds;
        private Consumer<String> progress = line -> { };

        private Builder() {
        }

        public Builder arch(Arch v) {
            this.arch = Objects.requireNonNull(v);
            return this;
        }

        public Builder outDir(Path v) {
            this.outDir = Objects.requireNonNull(v);
            return this;
        }

        public Builder workerJar(Path v) {
            this.workerJar = Objects.requireNonNull(v);
            return this;
        }

        public Builder lock(PackageLock v) {
            this.lock = v;
            return this;
        }

        /** The worker's dependency lock (default {@link WorkerLock#bundled()}). */
        public Builder workerLock(WorkerLock v) {
            this.workerLock = Objects.requireNonNull(v);
            return this;
        }

        public Builder cache(Path v) {
            this.cache = Objects.requireNonNull(v);
            return this;
        }

        /**
         * Where the host's apt sources are read from when the mirror variables are not set
         * (default {@code /etc/apt}; need not exist). See {@link DebianMirrors}.
         */
        public Builder etcApt(Path v) {
            this.etcApt = Objects.requireNonNull(v);
            return this;
        }

        /**
         * The environment {@link DebianMirrors#ARCHIVE_ENV} and {@link DebianMirrors#SECURITY_ENV}
         * are read from (default: this process's).
         */
        public Builder environment(Map<String, String> v) {
            this.environment = Map.copyOf(v);
            return this;
        }

        public Builder jreModules(List<String> v) {
            if (v.isEmpty() || !v.contains("java.base")) {
                throw new IllegalArgumentException("JRE modules must include java.base: " + v);
            }
            this.jreModules = List.copyOf(v);
            return this;
        }

        public Builder limits(WorkerLimits v) {
            this.limits = Objects.requireNonNull(v);
            return this;
        }

        public Builder mtime(long v) {
            if (v < 0 || v > 0xffffffffL) {
                throw new IllegalArgumentException("mtime out of range: " + v);
            }
            this.mtime = v;
            return this;
        }

        /**
         * Ship the JDK's base CDS archive (faster JVM start; only for the host's architecture,
         * and the image is then not bit-reproducible). Default off.
         */
        public Builder cds(boolean v) {
            this.cds = v;
            return this;
        }

        public Builder progress(Consumer<String> v) {
            this.progress = Objects.requireNonNull(v);
            return this;
        }

        public ImageBuilder build() {
            return new ImageBuilder(this);
        }

        private static long sourceDateEpoch() {
            String s = System.getenv("SOURCE_DATE_EPOCH");
            if (s == null || s.isBlank()) {
                return 0;
            }
            try {
                return Long.parseLong(s.trim());
            } catch (NumberFormatException e) {
                throw new ImageException("SOURCE_DATE_EPOCH='" + s + "' is not a number of seconds");
            }
        }
    }
}
