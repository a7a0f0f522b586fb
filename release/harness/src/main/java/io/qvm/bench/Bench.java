package io.qvm.bench;

import io.qvm.admin.BackendAdmin;
import io.qvm.admin.GuestImages;
import io.qvm.admin.Templates;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.SandboxPool;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * qvm's benchmark: one run measures, on this host, every figure issue #8 sets a goal for, and
 * writes the raw samples ({@code bench.json}) and a Markdown summary ({@code bench.md}) with the
 * host, QEMU version, accelerator and image hashes. Figures are data, never assertions.
 *
 * <p>What one run does, in order (each step's samples in the JSON under its name):
 * <ol>
 *   <li>{@code coldBoot}: one sandbox booted without a template, with every boot phase; it stays
 *       up as the <em>warm reused sandbox</em> for the steps below;</li>
 *   <li>{@code noopRoundTrip}: empty ECHOs through it; {@code throughput}: 16 MiB each way
 *       (ECHO with a 16 MiB body and {@code replyBytes: 0}, then an empty ECHO with
 *       {@code replyBytes: 16 MiB});</li>
 *   <li>{@code templateBuild}: a template built into a fresh directory;
 *       {@code restore}: clones restored one after another, to READY;</li>
 *   <li>{@code render.*}: a fixed SVG and a fixed PDF rendered five ways — the worker's renderer
 *       in this JVM (no isolation), a fresh JVM subprocess per request (process isolation),
 *       {@code runsc} directly on this host (gVisor alone; skipped where it cannot run), the warm
 *       reused sandbox, a fresh clone per request through a {@link SandboxPool} (its next clones
 *       restored in the background meanwhile), and a fresh clone per request prepared ahead with
 *       nothing else running;</li>
 *   <li>{@code poolAcquire}: acquiring from a pool whose idle clones are ready;</li>
 *   <li>{@code memory}: one idle clone's RSS / PSS / private memory from
 *       {@code /proc/PID/smaps_rollup}, then {@link Options#clones} clones up at once — the time
 *       until all are ready and their memory.</li>
 * </ol>
 * For another architecture than the host's ({@code qvm bench --arch}, under TCG) the cold-booted
 * sandbox is closed after the throughput step, so one emulated VM boots at a time; a warmed
 * clone is the warm sandbox of the render ways; the host-side ways, the pool-per-request way,
 * the pool acquire and the memory steps are recorded as skipped.
 */
public final class Bench {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /**
     * @param imageRoot   the guest image root
     * @param stateRoot   a state directory for the bench's sandboxes
     * @param workRoot    scratch space (the template, the runsc bundle); removed afterwards
     * @param workerJar   the worker's jar for the in-JVM, subprocess and runsc ways (null: those skipped)
     * @param renders     samples per render way (fresh JVM subprocess: a fifth of it, at least 3)
     * @param clones      clones up at once for the memory step
     * @param progress    one line per step
     * @param guest       the guest architecture (null: the host's). Another than the host's runs
     *                    under TCG and measures the cold boot, the template, the restore and the
     *                    in-sandbox render ways only: the host-side ways do not depend on the
     *                    guest, and the pool and memory steps would take an hour of emulation
     */
    public record Options(Path imageRoot, Path stateRoot, Path workRoot, Path workerJar, int renders, int clones,
            Consumer<String> progress, Arch guest) {

        public Options(Path imageRoot, Path stateRoot, Path workRoot, Path workerJar, int renders, int clones,
                Consumer<String> progress) {
            this(imageRoot, stateRoot, workRoot, workerJar, renders, clones, progress, null);
        }

        public Options {
            Objects.requireNonNull(imageRoot, "imageRoot");
            Objects.requireNonNull(stateRoot, "stateRoot");
            Objects.requireNonNull(workRoot, "workRoot");
            Objects.requireNonNull(progress, "progress");
            if (renders < 3 || clones < 1) {
                throw new IllegalArgumentException("renders must be >= 3 and clones >= 1");
            }
        }
    }

    private final Options o;
    private final ObjectNode out = JsonNodeFactory.instance.objectNode();
    private final SandboxConfig config = SandboxConfig.builder().bootTimeout(Duration.ofMinutes(6))
            .requestTimeout(Duration.ofMinutes(2)).build();
    /** The fixed inputs: the pool's canned documents (samples/hello.svg and hello.pdf). */
    static final byte[] SVG = resource("/io/qvm/warmup/hello.svg");
    static final byte[] PDF = resource("/io/qvm/warmup/hello.pdf");

    private Bench(Options o) {
        this.o = o;
    }

    /** Runs the whole bench; returns the results (also what {@code bench.json} holds). */
    public static ObjectNode run(Options o) throws Exception {
        return new Bench(o).runAll();
    }

    private ObjectNode runAll() throws Exception {
        Files.createDirectories(o.workRoot());
        out.put("schema", "qvm.bench/1");
        out.put("started", Instant.now().toString());
        Path templates = Files.createTempDirectory(o.workRoot(), "templates-");
        QemuVmBackend.Builder coldBuilder = QemuVmBackend.builder().imageDir(o.imageRoot())
                .stateDirectory(o.stateRoot()).templates(false).progress(o.progress());
        QemuVmBackend.Builder cloneBuilder = QemuVmBackend.builder().imageDir(o.imageRoot())
                .stateDirectory(o.stateRoot()).templateDirectory(templates).progress(line -> { });
        if (o.guest() != null) {
            coldBuilder.guestArch(o.guest());
            cloneBuilder.guestArch(o.guest());
        }
        try (QemuVmBackend cold = coldBuilder.build(); QemuVmBackend clones = cloneBuilder.build()) {
            host(cold);
            boolean cross = cold.guestArch() != cold.admin().hostArch();
            String crossSkip = "a " + cold.guestArch().qemuName() + " guest on a " + cold.admin().hostArch().qemuName()
                    + " host (emulated): qvm bench --arch measures boot, template, restore and the in-sandbox ways only";
            step("cold boot to READY (no template)");
            long[] t0 = new long[1];
            Sandbox warm = booting("cold boot", () -> {
                t0[0] = System.nanoTime();
                return cold.start(config);
            });
            try {
                ObjectNode c = out.putObject("coldBoot");
                c.put("wallMillis", millis(t0[0]));
                c.put("readyMillis", warm.bootReport().total().toMillis());
                ObjectNode ph = c.putObject("phases");
                warm.bootReport().phases().forEach((k, v) -> ph.put(k, v.toMillis()));

                step("no-op round trip and throughput on the warm sandbox");
                noop(warm);
                throughput(warm);
                if (cross) {
                    // One emulated VM at a time: an idle aarch64 guest beside a booting one on a
                    // 2-core host slowed the boot past a race in the guest (README, known problems).
                    // The in-sandbox render ways then use a warmed clone as the warm sandbox.
                    warm.close();
                    warm = null;
                }

                step("template build");
                long[] tb = new long[1];
                Templates.TemplateInfo t = booting("template build", () -> {
                    tb[0] = System.nanoTime();
                    return clones.admin().buildTemplate(config);
                });
                ObjectNode b = out.putObject("templateBuild");
                b.put("wallMillis", millis(tb[0]));
                b.put("bootMillis", t.bootMillis());
                b.put("saveMillis", t.saveMillis());
                b.put("mode", t.mode());
                b.put("stateBytes", t.stateBytes());

                step("restore to READY, one clone after another");
                restores(clones);

                if (warm == null) {
                    step("a clone as the warm sandbox");
                    warm = booting("the warm clone", () -> clones.start(config));
                    SandboxPool.warmUp(warm);
                }
                Sandbox w = warm;
                step("render latency, five ways");
                ObjectNode r = out.putObject("render");
                for (boolean pdf : new boolean[] {false, true}) {
                    ObjectNode ways = r.putObject(pdf ? "pdf" : "svg");
                    RenderRequest req = pdf ? RenderRequest.pdf(PDF) : RenderRequest.svg(SVG);
                    ways.set("hostJvm", cross ? skipped(crossSkip) : o.workerJar() == null ? skipped("no worker jar")
                            : series(HostWorkers.inProcess(o.workerJar(), req, o.renders())));
                    ways.set("jvmPerRequest", cross ? skipped(crossSkip) : o.workerJar() == null
                            ? skipped("no worker jar")
                            : series(HostWorkers.subprocessPerRequest(o.workerJar(), req, Math.max(3, o.renders() / 5))));
                    ways.set("runscOnHost", cross ? skipped(crossSkip) : runsc(req));
                    for (int i = 0; i < 3; i++) {
                        w.render(req); // the warm sandbox: warm for this document type too
                    }
                    ways.set("warmSandbox", series(time(o.renders(), () -> w.render(req))));
                    ways.set("clonePerRequest", cross ? skipped(crossSkip) : clonePerRequest(clones, req));
                    ways.set("clonePrepared", clonePrepared(clones, req));
                }
            } finally {
                if (warm != null) {
                    warm.close();
                }
            }
            if (cross) {
                out.set("poolAcquire", skipped(crossSkip));
                out.set("memory", skipped(crossSkip));
            } else {
                step("pool acquire with idle clones");
                poolAcquire(clones);
                step("memory per idle clone, and " + o.clones() + " clones at once");
                memory(clones);
            }
        } finally {
            FileTrees.deleteQuietly(templates);
        }
        out.put("finished", Instant.now().toString());
        out.set("goals", Goals.evaluate(out));
        return out;
    }

    /** How many times a step that boots a VM is tried: emulated boots fail now and then (README, known problems). */
    static final int BOOT_ATTEMPTS = 3;

    private interface Boot<T> {
        T start() throws Exception;
    }

    /**
     * {@code boot}, tried up to {@link #BOOT_ATTEMPTS} times when the VM fails to boot; each
     * failure is kept in {@code bootFailures} (bench.md lists them), and the figures come from the
     * attempt that worked. Any other failure ends the bench at once.
     */
    private <T> T booting(String what, Boot<T> boot) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                return boot.start();
            } catch (io.qvm.SandboxException e) {
                if (!bootFailure(e) || attempt >= BOOT_ATTEMPTS) {
                    throw e;
                }
                String first = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
                ObjectNode f = out.withArray("bootFailures").addObject();
                f.put("step", what);
                f.put("attempt", attempt);
                f.put("error", first);
                o.progress().accept("bench: " + what + " failed to boot (attempt " + attempt + " of " + BOOT_ATTEMPTS
                        + "): " + first + "; trying again");
            }
        }
    }

    /** Whether {@code e} is (or wraps, as a template build may) a VM that did not boot. */
    static boolean bootFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof io.qvm.BootFailedException) {
                return true;
            }
        }
        return false;
    }

    private void step(String what) {
        o.progress().accept("bench: " + what);
    }

    private void host(QemuVmBackend b) throws IOException {
        BackendAdmin admin = b.admin();
        ObjectNode host = out.putObject("host");
        host.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        host.put("arch", admin.hostArch().qemuName());
        host.put("guestArch", b.guestArch().qemuName());
        host.put("cpus", Runtime.getRuntime().availableProcessors());
        host.put("memTotalKiB", memTotalKiB());
        host.put("java", Runtime.version().toString());
        admin.qemu().ifPresent(q -> {
            host.put("qemu", q.binary().toString());
            host.put("qemuVersion", q.version());
        });
        host.put("accelerator", admin.accelerator(config).qemuName());
        GuestImages.Image image = GuestImages.verify(o.imageRoot(), b.guestArch());
        ObjectNode img = host.putObject("image");
        image.sha256().forEach(img::put);
        ObjectNode cfg = out.putObject("config");
        cfg.put("vcpus", config.vcpus());
        cfg.put("memoryMib", config.memoryMib());
    }

    private void noop(Sandbox warm) throws IOException {
        for (int i = 0; i < 20; i++) {
            warm.echo(new byte[0]);
        }
        out.set("noopRoundTrip", series(time(300, () -> warm.echo(new byte[0]))));
    }

    private void throughput(Sandbox warm) {
        int size = 16 << 20;
        ObjectNode t = out.putObject("throughput");
        t.put("bytes", size);
        ArrayNode up = t.putArray("upMBps");
        ArrayNode down = t.putArray("downMBps");
        byte[] body = new byte[size];
        new java.util.Random(1).nextBytes(body);
        for (int i = 0; i < 3; i++) {
            long a = System.nanoTime();
            BackendAdmin.echo(warm, body, 0);
            up.add(size / 1e6 / ((System.nanoTime() - a) / 1e9));
            long b = System.nanoTime();
            int got = BackendAdmin.echo(warm, null, size);
            if (got != size) {
                throw new IllegalStateException("download returned " + got + " bytes");
            }
            down.add(size / 1e6 / ((System.nanoTime() - b) / 1e9));
        }
    }

    private void restores(QemuVmBackend clones) {
        ObjectNode r = out.putObject("restore");
        ArrayNode ready = r.putArray("readyMillis");
        ObjectNode phases = null;
        for (int i = 0; i < 5; i++) {
            try (Sandbox s = clones.start(config)) {
                ready.add(s.bootReport().total().toMillis());
                if (phases == null) {
                    phases = r.putObject("phases");
                    ObjectNode ph = phases;
                    s.bootReport().phases().forEach((k, v) -> ph.put(k, v.toMillis()));
                }
            }
        }
    }

    private ObjectNode runsc(RenderRequest req) {
        if (o.workerJar() == null) {
            return skipped("no worker jar");
        }
        try {
            return series(HostWorkers.underRunsc(o.imageRoot(), o.workRoot(), req, o.renders()));
        } catch (Exception e) {
            return skipped("runsc could not run the worker on this host: " + e.getMessage());
        }
    }

    private ObjectNode clonePerRequest(QemuVmBackend clones, RenderRequest req) {
        try (SandboxPool pool = SandboxPool.builder(clones, config).recycle(SandboxPool.Recycle.perRequest())
                .minIdle(2).maxSandboxes(3).build()) {
            awaitIdle(pool, 2);
            List<Long> samples = new ArrayList<>();
            for (int i = 0; i < o.renders(); i++) {
                awaitIdle(pool, 1); // "idle clones restored ahead": the request does not wait for a restore
                long a = System.nanoTime();
                pool.render(req);
                samples.add(System.nanoTime() - a);
            }
            return series(samples);
        }
    }

    /**
     * A fresh clone per request with nothing else running: each clone restored and warmed (the
     * pool's canned renders) ahead, then one timed render, then closed. What a request sees on a
     * host with a spare core for the restores; {@link #clonePerRequest} shows this 2-core host,
     * where the next clone's restore competes with the request.
     */
    private ObjectNode clonePrepared(QemuVmBackend clones, RenderRequest req) throws InterruptedException {
        List<Long> samples = new ArrayList<>();
        for (int i = 0; i < Math.max(3, o.renders() / 2); i++) {
            try (Sandbox s = clones.start(config)) {
                SandboxPool.warmUp(s); // what the pool does to each clone it restores ahead
                Thread.sleep(500);
                long a = System.nanoTime();
                s.render(req);
                samples.add(System.nanoTime() - a);
            }
        }
        return series(samples);
    }

    private void poolAcquire(QemuVmBackend clones) {
        try (SandboxPool pool = SandboxPool.builder(clones, config).recycle(SandboxPool.Recycle.perRequest())
                .minIdle(2).maxSandboxes(3).build()) {
            List<Long> samples = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                awaitIdle(pool, 2);
                long a = System.nanoTime();
                long[] got = new long[1];
                pool.withSandbox(s -> {
                    got[0] = System.nanoTime();
                    return null;
                });
                samples.add(got[0] - a);
            }
            out.set("poolAcquire", series(samples));
        }
    }

    private void memory(QemuVmBackend clones) throws Exception {
        ObjectNode m = out.putObject("memory");
        try (Sandbox one = clones.start(config)) {
            Thread.sleep(2000); // idle: let the guest settle after READY
            long pid = BackendAdmin.qemuPid(one).orElseThrow();
            ObjectNode idle = Smaps.of(pid).toJson();
            putCpuPercent(idle, "cpuPercentIdle", pid, Duration.ofSeconds(5));
            m.set("idleClone", idle);
        }
        long t0 = System.nanoTime();
        List<CompletableFuture<Sandbox>> starting = new ArrayList<>();
        for (int i = 0; i < o.clones(); i++) {
            starting.add(CompletableFuture.supplyAsync(() -> clones.start(config)));
        }
        List<Sandbox> up = new ArrayList<>();
        try {
            for (CompletableFuture<Sandbox> f : starting) {
                up.add(f.join());
            }
            ObjectNode many = m.putObject("clonesAtOnce");
            many.put("count", up.size());
            many.put("allReadyMillis", millis(t0));
            Thread.sleep(2000);
            ArrayNode each = many.putArray("each");
            long pss = 0;
            long priv = 0;
            long own = 0;
            for (Sandbox s : up) {
                Smaps sm = Smaps.of(BackendAdmin.qemuPid(s).orElseThrow());
                each.add(sm.toJson());
                pss += sm.pssKiB();
                priv += sm.privateKiB();
                own += sm.ownKiB();
            }
            many.put("ownKiBTotal", own);
            many.put("pssKiBTotal", pss);
            many.put("privateKiBTotal", priv);
            putMemAvailable(many, "memAvailableKiBWhileUp", ProcFs.system());
        } finally {
            for (CompletableFuture<Sandbox> f : starting) {
                f.thenAccept(Sandbox::close).exceptionally(e -> null).join();
            }
        }
    }

    /**
     * CPU time (user + system) {@code pid} used over {@code window}, as a percentage of one core,
     * from {@link ProcessHandle.Info#totalCpuDuration()} (every OS, no {@code /proc}).
     *
     * @throws IOException when the JDK cannot tell this process's CPU time on this host
     */
    static double cpuPercent(long pid, Duration window) throws IOException, InterruptedException {
        long a = cpuNanos(pid);
        long t = System.nanoTime();
        Thread.sleep(window.toMillis());
        long b = cpuNanos(pid);
        double seconds = (System.nanoTime() - t) / 1e9;
        return Math.round((b - a) / 1e9 / seconds * 1000) / 10.0;
    }

    private static long cpuNanos(long pid) throws IOException {
        return ProcessHandle.of(pid).flatMap(h -> h.info().totalCpuDuration()).map(Duration::toNanos)
                .orElseThrow(() -> new IOException("the JDK cannot read the CPU time of pid " + pid + " on this host"));
    }

    private static void awaitIdle(SandboxPool pool, int n) {
        long until = System.nanoTime() + Duration.ofMinutes(5).toNanos();
        while (pool.stats().idle() < n) {
            if (System.nanoTime() > until) {
                throw new IllegalStateException("the pool did not get " + n + " idle clones within 5 minutes: " + pool);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    /** One timed step; may fail with an I/O error (the host-side workers). */
    interface Step {
        void run() throws IOException;
    }

    /** {@code n} timings of {@code step}, nanoseconds. */
    static List<Long> time(int n, Step step) throws IOException {
        List<Long> samples = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long a = System.nanoTime();
            step.run();
            samples.add(System.nanoTime() - a);
        }
        return samples;
    }

    /** Samples (nanoseconds) as {@code {"n", "p50Millis", "p99Millis", "minMillis", "maxMillis", "samplesMillis"}}. */
    static ObjectNode series(List<Long> nanos) {
        ObjectNode s = JsonNodeFactory.instance.objectNode();
        long[] sorted = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
        s.put("n", sorted.length);
        s.put("p50Millis", pct(sorted, 50) / 1e6);
        s.put("p99Millis", pct(sorted, 99) / 1e6);
        s.put("minMillis", sorted[0] / 1e6);
        s.put("maxMillis", sorted[sorted.length - 1] / 1e6);
        ArrayNode all = s.putArray("samplesMillis");
        nanos.forEach(v -> all.add(Math.round(v / 1e4) / 100.0));
        return s;
    }

    /** Nearest-rank percentile. */
    static long pct(long[] sorted, int p) {
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    static ObjectNode skipped(String why) {
        return JsonNodeFactory.instance.objectNode().put("skipped", why);
    }

    private static long millis(long since) {
        return (System.nanoTime() - since) / 1_000_000;
    }

    /** The host's RAM, from the JDK (every OS). */
    private static long memTotalKiB() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean sun ? sun.getTotalMemorySize() / 1024 : -1;
    }

    /** {@code MemAvailable} (Linux), else the reason it is not measured, under {@code key} in {@code n}. */
    static void putMemAvailable(ObjectNode n, String key, ProcFs proc) {
        try {
            n.put(key, proc.meminfoKiB("MemAvailable:"));
        } catch (IOException e) {
            n.putNull(key);
            n.put(key + "Unavailable", e.getMessage());
        }
    }

    /** {@code n.put(key, cpuPercent(pid, window))}, or the reason it is not measured. */
    static void putCpuPercent(ObjectNode n, String key, long pid, Duration window) throws InterruptedException {
        try {
            n.put(key, cpuPercent(pid, window));
        } catch (IOException e) {
            n.putNull(key);
            n.put(key + "Unavailable", e.getMessage());
        }
    }

    /** Writes {@code bench.json} and {@code bench.md} into {@code dir}. */
    public static void write(ObjectNode results, Path dir) throws IOException {
        Files.createDirectories(dir);
        JSON.writeValue(dir.resolve("bench.json").toFile(), results);
        Files.writeString(dir.resolve("bench.md"), Summary.markdown(results));
    }

    static byte[] resource(String name) {
        try (InputStream in = Bench.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

}
