package io.qvm.bench;

import io.qvm.admin.BackendAdmin;
import io.qvm.admin.GuestImages;
import io.qvm.admin.Templates;
import com.fasterxml.jackson.databind.JsonNode;
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
 *   <li>{@code coldBootWithoutArchive}: another, closed at once, with the worker's class archive
 *       off (adr/0018), to say what the archive buys; {@code coldBoot.classArchive} says whether
 *       the first one used it;</li>
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
     * @param checkpoint  where the results so far are written after every step (bench.json and
     *                    bench.md; null: only at the end, by the caller)
     */
    public record Options(Path imageRoot, Path stateRoot, Path workRoot, Path workerJar, int renders, int clones,
            Consumer<String> progress, Arch guest, Path checkpoint) {

        public Options(Path imageRoot, Path stateRoot, Path workRoot, Path workerJar, int renders, int clones,
                Consumer<String> progress) {
            this(imageRoot, stateRoot, workRoot, workerJar, renders, clones, progress, null, null);
        }

        public Options(Path imageRoot, Path stateRoot, Path workRoot, Path workerJar, int renders, int clones,
                Consumer<String> progress, Arch guest) {
            this(imageRoot, stateRoot, workRoot, workerJar, renders, clones, progress, guest, null);
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

    /** Section {@code key}: the wall time since {@code t0}, READY and every phase of {@code r}. */
    private ObjectNode coldBootJson(String key, long t0, io.qvm.BootReport r) {
        ObjectNode c = out.putObject(key);
        c.put("wallMillis", millis(t0));
        c.put("readyMillis", r.total().toMillis());
        ObjectNode ph = c.putObject("phases");
        r.phases().forEach((k, v) -> ph.put(k, v.toMillis()));
        return c;
    }

    /** The boot report's word on the worker's class archive: in use, made in this boot, or why not. */
    static String classArchiveNote(io.qvm.BootReport r) {
        return r.notes().stream().filter(n -> n.startsWith("class archive: ")).map(n -> n.substring("class archive: ".length()))
                .findFirst().orElse("not reported");
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
            checkpoint();
            boolean cross = cold.guestArch() != cold.admin().hostArch();
            String crossSkip = "a " + cold.guestArch().qemuName() + " guest on a " + cold.admin().hostArch().qemuName()
                    + " host (emulated): qvm bench --arch measures boot, template, restore and the in-sandbox ways only";
            Sandbox[] warm = new Sandbox[1];
            try {
                section("coldBoot", "cold boot to READY (no template)", () -> {
                    long[] t0 = new long[1];
                    warm[0] = booting("cold boot", () -> {
                        t0[0] = System.nanoTime();
                        return cold.start(config);
                    });
                    coldBootJson("coldBoot", t0[0], warm[0].bootReport())
                            .put("classArchive", classArchiveNote(warm[0].bootReport()));
                });
                section("coldBootWithoutArchive", "cold boot to READY without the worker's class archive (adr/0018)", () -> {
                    // the builder is not used after this section
                    try (QemuVmBackend plain = coldBuilder.classArchives(false).build()) {
                        long t0 = System.nanoTime();
                        try (Sandbox s = booting("cold boot without the class archive", () -> plain.start(config))) {
                            coldBootJson("coldBootWithoutArchive", t0, s.bootReport());
                        }
                    }
                });
                String noWarm = "the cold boot failed: no warm sandbox";
                section("noopRoundTrip", "no-op round trip on the warm sandbox", () -> {
                    if (warm[0] == null) {
                        out.set("noopRoundTrip", skipped(noWarm));
                    } else {
                        noop(warm[0]);
                    }
                });
                section("throughput", "throughput on the warm sandbox", () -> {
                    if (warm[0] == null) {
                        out.set("throughput", skipped(noWarm));
                    } else {
                        throughput(warm[0]);
                    }
                });
                if (cross && warm[0] != null) {
                    // One emulated VM at a time: an idle aarch64 guest beside a booting one on a
                    // 2-core host slowed the boot past a race in the guest (README, known problems).
                    // The in-sandbox render ways then use a warmed clone as the warm sandbox.
                    warm[0].close();
                    warm[0] = null;
                }

                section("templateBuild", "template build", () -> {
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
                });
                section("restore", "restore to READY, one clone after another", () -> restores(clones));

                if (warm[0] == null) {
                    section("warmClone", "a clone as the warm sandbox", () -> {
                        warm[0] = booting("the warm clone", () -> clones.start(config));
                        SandboxPool.warmUp(warm[0]);
                    });
                }
                ObjectNode r = out.putObject("render");
                for (boolean pdf : new boolean[] {false, true}) {
                    String type = pdf ? "pdf" : "svg";
                    ObjectNode ways = r.putObject(type);
                    RequestFactory req = pdf ? () -> RenderRequest.pdf(PDF) : () -> RenderRequest.svg(SVG);
                    way(ways, "hostJvm", type, () -> cross ? skipped(crossSkip) : o.workerJar() == null
                            ? skipped("no worker jar") : series(HostWorkers.inProcess(o.workerJar(), req.get(), o.renders())));
                    way(ways, "jvmPerRequest", type, () -> cross ? skipped(crossSkip) : o.workerJar() == null
                            ? skipped("no worker jar")
                            : series(HostWorkers.subprocessPerRequest(o.workerJar(), req.get(), Math.max(3, o.renders() / 5))));
                    way(ways, "runscOnHost", type, () -> cross ? skipped(crossSkip) : runsc(req.get()));
                    way(ways, "warmSandbox", type, () -> {
                        if (warm[0] == null) {
                            return skipped("no warm sandbox (its boot failed)");
                        }
                        Sandbox w = warm[0];
                        for (int i = 0; i < 3; i++) {
                            w.render(req.get()); // the warm sandbox: warm for this document type too
                        }
                        return series(time(o.renders(), () -> w.render(req.get())));
                    });
                    way(ways, "clonePerRequest", type, () -> cross ? skipped(crossSkip) : clonePerRequest(clones, req.get()));
                    way(ways, "clonePrepared", type, () -> clonePrepared(clones, req.get()));
                }
                out.set("ratios", ratios(out.path("render")));
                checkpoint();
            } finally {
                if (warm[0] != null) {
                    warm[0].close();
                }
            }
            if (cross) {
                out.set("idleCpu", skipped(crossSkip));
                out.set("poolAcquire", skipped(crossSkip));
                out.set("documentsPerMinute", skipped(crossSkip));
                out.set("serveHttp", skipped(crossSkip));
                out.set("memory", skipped(crossSkip));
            } else {
                section("idleCpu", "CPU of an idle clone, running and paused", () -> idleCpu(clones));
                section("poolAcquire", "pool acquire with idle clones", () -> poolAcquire(clones));
                section("documentsPerMinute", "documents per minute through the default pool",
                        () -> documentsPerMinute(clones));
                section("serveHttp", "documents per minute over HTTP through qvm serve", () -> serveHttp(clones));
                section("memory", "memory per idle clone, and " + o.clones() + " clones at once", () -> memory(clones));
            }
        } finally {
            FileTrees.deleteQuietly(templates);
        }
        out.put("finished", Instant.now().toString());
        out.set("goals", Goals.evaluate(out));
        checkpoint();
        return out;
    }

    /** One measuring step of the run. */
    interface Section {
        void run() throws Exception;
    }

    /** Makes a fresh request each time (a request's body must not be shared between ways). */
    interface RequestFactory {
        RenderRequest get();
    }

    /** One render way: its figures, or what it failed with. */
    interface Way {
        ObjectNode measure() throws Exception;
    }

    /**
     * Runs one section: what it measured stays in the results even when a later one fails; a
     * section that fails is recorded under its key as {@code {"failed": reason}} and in
     * {@code failedSections}, and the run goes on. The results so far are written after each
     * section ({@link Options#checkpoint}).
     */
    private void section(String key, String what, Section body) throws InterruptedException {
        step(what);
        try {
            body.run();
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            fail(out, key, what, e);
        }
        checkpoint();
    }

    private void way(ObjectNode ways, String key, String type, Way w) throws InterruptedException {
        step("render, " + type + ", " + key);
        try {
            ways.set(key, w.measure());
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            fail(ways, key, "render " + type + " " + key, e);
        }
        checkpoint();
    }

    private void fail(ObjectNode where, String key, String what, Exception e) {
        String why = e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).lines().findFirst().orElse("");
        where.set(key, failed(why));
        ObjectNode f = out.withArray("failedSections").addObject();
        f.put("section", what);
        f.put("error", why);
        o.progress().accept("bench: " + what + " FAILED (" + why + "); going on with the next step");
    }

    static ObjectNode failed(String why) {
        return JsonNodeFactory.instance.objectNode().put("failed", why);
    }

    /** Writes the results so far where {@link Options#checkpoint} says (bench.json and bench.md). */
    private void checkpoint() {
        if (o.checkpoint() == null) {
            return;
        }
        try {
            ObjectNode partial = out.deepCopy();
            if (!partial.has("goals")) {
                partial.set("goals", Goals.evaluate(partial));
            }
            write(partial, o.checkpoint());
        } catch (IOException | RuntimeException e) {
            o.progress().accept("bench: could not write the results so far to " + o.checkpoint() + ": " + e);
        }
    }

    /** Each render type's p50 ratios: a fresh clone per request from a pool against the warm sandbox and a fresh JVM. */
    static ObjectNode ratios(JsonNode render) {
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        for (String type : new String[] {"svg", "pdf"}) {
            JsonNode w = render.path(type);
            double clone = w.path("clonePerRequest").path("p50Millis").asDouble(Double.NaN);
            ObjectNode t = r.putObject(type);
            putRatio(t, "clonePerRequestOverWarmSandbox", clone, w.path("warmSandbox").path("p50Millis").asDouble(Double.NaN));
            putRatio(t, "clonePerRequestOverJvmPerRequest", clone,
                    w.path("jvmPerRequest").path("p50Millis").asDouble(Double.NaN));
            putRatio(t, "clonePreparedOverWarmSandbox", w.path("clonePrepared").path("p50Millis").asDouble(Double.NaN),
                    w.path("warmSandbox").path("p50Millis").asDouble(Double.NaN));
        }
        return r;
    }

    private static void putRatio(ObjectNode n, String key, double a, double b) {
        double v = a / b;
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            n.putNull(key);
        } else {
            n.put(key, Math.round(v * 1000) / 1000.0);
        }
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

    /**
     * After the idle pause, how long until the pause was checked, redone if need be, and the redo
     * checked too (QemuSandbox.PauseCheck.DEFAULT: 0.5 s, then 4 s, twice), with 2 s to spare.
     */
    static final long PAUSE_CHECKED_MILLIS = 11_000;

    /**
     * The memory of {@link #idleCpu}'s running clone, warmed by the pool's canned renders as a
     * pool keeps its next one (under TCG they fill the translation cache); reported under memory.
     */
    private ObjectNode warmedClone;

    private void memory(QemuVmBackend clones) throws Exception {
        ObjectNode m = out.putObject("memory");
        // running idle (idlePause off), as runs before issue 22 measured it: idleCpu has the paused figure
        try (Sandbox one = clones.start(config.newBuilder().idlePause(Duration.ZERO).build())) {
            Thread.sleep(2000); // idle: let the guest settle after READY
            long pid = BackendAdmin.qemuPid(one).orElseThrow();
            ObjectNode idle = Smaps.of(pid).toJson();
            putCpuPercent(idle, "cpuPercentIdle", pid, Duration.ofSeconds(5));
            m.set("idleClone", idle);
        }
        if (warmedClone != null) {
            m.set("warmedClone", warmedClone);
        }
        checkpoint();
        long t0 = System.nanoTime();
        List<CompletableFuture<Sandbox>> starting = new ArrayList<>();
        // a thread per start (the common pool runs one task at a time on a 2-core host)
        java.util.concurrent.ExecutorService each0 = java.util.concurrent.Executors.newFixedThreadPool(o.clones());
        for (int i = 0; i < o.clones(); i++) {
            starting.add(CompletableFuture.supplyAsync(() -> clones.start(config), each0));
        }
        each0.shutdown();
        List<Sandbox> up = new ArrayList<>();
        ObjectNode many = m.putObject("clonesAtOnce");
        many.put("requested", o.clones());
        ArrayNode errors = many.putArray("errors");
        try {
            for (CompletableFuture<Sandbox> f : starting) {
                try {
                    up.add(f.join());
                } catch (java.util.concurrent.CompletionException e) {
                    Throwable c = e.getCause() != null ? e.getCause() : e;
                    String why = c.getClass().getSimpleName() + ": "
                            + String.valueOf(c.getMessage()).lines().findFirst().orElse("");
                    errors.add(why.length() > 400 ? why.substring(0, 400) + "…" : why);
                }
            }
            // A start that failed (typed, with its reason) is recorded; the others are measured.
            many.put("count", up.size());
            many.put("failed", o.clones() - up.size());
            many.put("allReadyMillis", millis(t0));
            many.put("restored", up.stream().filter(s -> s.bootReport().restored()).count());
            // idle: paused, and each pause checked by now
            Thread.sleep(config.idlePause().toMillis() + PAUSE_CHECKED_MILLIS);
            ArrayNode each = many.putArray("each");
            long pss = 0;
            long priv = 0;
            long own = 0;
            List<Long> pids = new ArrayList<>();
            for (Sandbox s : up) {
                long pid = BackendAdmin.qemuPid(s).orElseThrow();
                pids.add(pid);
                Smaps sm = Smaps.of(pid);
                each.add(sm.toJson());
                pss += sm.pssKiB();
                priv += sm.privateKiB();
                own += sm.ownKiB();
            }
            ArrayNode cpu = many.putArray("idleCpuPercentEach");
            cpuPercentEach(pids, Duration.ofSeconds(5)).forEach(cpu::add);
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
     * An idle clone's CPU, running ({@code idlePause} off) and paused (the default), each over 5 s
     * after its warm-up; then what a request pays to wake a paused one: a render right after the
     * resume, against the same render right after it in the same, running, sandbox.
     */
    private void idleCpu(QemuVmBackend clones) throws Exception {
        ObjectNode n = out.putObject("idleCpu");
        n.put("idlePauseMillis", config.idlePause().toMillis());
        n.put("windowMillis", 5000);
        try (Sandbox s = clones.start(config.newBuilder().idlePause(Duration.ZERO).build())) {
            SandboxPool.warmUp(s);
            Thread.sleep(2000);
            long pid = BackendAdmin.qemuPid(s).orElseThrow();
            warmedClone = Smaps.of(pid).toJson(); // memory's warmedClone: a pool's next clone is this one
            putCpuPercent(n, "runningPercent", pid, Duration.ofSeconds(5));
        }
        checkpoint();
        try (Sandbox s = clones.start(config)) {
            SandboxPool.warmUp(s);
            Thread.sleep(config.idlePause().toMillis() + PAUSE_CHECKED_MILLIS);
            putCpuPercent(n, "pausedPercent", BackendAdmin.qemuPid(s).orElseThrow(), Duration.ofSeconds(5));
            List<Long> resumed = new ArrayList<>();
            List<Long> running = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                Thread.sleep(config.idlePause().toMillis() + 500); // paused again
                long a = System.nanoTime();
                s.render(RenderRequest.svg(SVG));
                resumed.add(System.nanoTime() - a);
                long b = System.nanoTime();
                s.render(RenderRequest.svg(SVG)); // right after: still running
                running.add(System.nanoTime() - b);
            }
            n.set("svgRenderAfterPause", series(resumed));
            n.set("svgRenderRunning", series(running));
        }
    }

    /**
     * Documents through the default pool ({@code SandboxPool.builder(backend, config).build()}: a
     * fresh clone per document, one restored ahead): one client sending the next document when
     * the last came back, then two clients at once; documents per minute and their latency.
     */
    private void documentsPerMinute(QemuVmBackend clones) throws Exception {
        ObjectNode n = out.putObject("documentsPerMinute");
        int docs = Math.max(10, o.renders());
        for (int clients : new int[] {1, 2}) {
            try (SandboxPool pool = SandboxPool.builder(clones, config).build()) {
                pool.warmUp();
                List<Long> latency = java.util.Collections.synchronizedList(new ArrayList<>());
                long t0 = System.nanoTime();
                clients(clients, docs, () -> {
                    long a = System.nanoTime();
                    pool.render(RenderRequest.svg(SVG));
                    latency.add(System.nanoTime() - a);
                });
                long wall = System.nanoTime() - t0;
                ObjectNode r = n.putObject(clients == 1 ? "oneClient" : "twoClients");
                r.put("documents", docs);
                r.put("wallMillis", wall / 1_000_000);
                r.put("perMinute", Math.round(docs * 60e9 / wall * 10) / 10.0);
                r.set("latency", series(new ArrayList<>(latency)));
                SandboxPool.PoolStats st = pool.stats();
                r.put("restored", st.restored());
                r.put("coldBooted", st.started());
            }
            checkpoint();
        }
    }

    /**
     * {@link #documentsPerMinute}'s documents again, over real HTTP through {@code qvm serve}'s
     * {@link io.qvm.server.QvmServer} on loopback (a token, the same default pool): what a client
     * of the service gets, beside the library's own figures, at 1, 2 and 4 clients, with
     * {@code qvm serve}'s default sizing (2 sandboxes, one started ahead; more clients queue).
     */
    private void serveHttp(QemuVmBackend clones) throws Exception {
        ObjectNode n = out.putObject("serveHttp");
        int docs = Math.max(10, o.renders());
        String token = "bench-" + Long.toHexString(System.nanoTime());
        io.qvm.server.Tenants tenants = io.qvm.server.Tenants.parse(List.of("bench:"
                + io.qvm.server.Tenants.sha256Hex(token)), "bench");
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        for (int clients : new int[] {1, 2, 4}) {
            // qvm serve's own sizing (--max-sandboxes 2, --min-idle 1): clients beyond wait in its queue
            try (SandboxPool pool = SandboxPool.builder(clones, config).maxSandboxes(2).minIdle(1).build();
                 io.qvm.server.QvmServer server = io.qvm.server.QvmServer.builder(pool)
                         .listen(new java.net.InetSocketAddress("127.0.0.1", 0)).tenants(tenants).build().start()) {
                if (!pool.awaitWarm(config.bootTimeout())) {
                    throw new IllegalStateException("no sandbox was warm within the boot deadline");
                }
                java.net.URI uri = java.net.URI.create("http://127.0.0.1:" + server.address().getPort()
                        + "/v1/render");
                List<Long> latency = java.util.Collections.synchronizedList(new ArrayList<>());
                java.util.Map<Integer, Integer> statuses = new java.util.concurrent.ConcurrentHashMap<>();
                long t0 = System.nanoTime();
                clients(clients, docs, () -> {
                    long a = System.nanoTime();
                    try {
                        int status = http.send(java.net.http.HttpRequest.newBuilder(uri)
                                .header("Authorization", "Bearer " + token)
                                .header("Content-Type", "image/svg+xml")
                                .POST(java.net.http.HttpRequest.BodyPublishers.ofByteArray(SVG))
                                .timeout(config.requestTimeout().plus(config.bootTimeout())).build(),
                                java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
                        statuses.merge(status, 1, Integer::sum);
                        if (status == 200) {
                            latency.add(System.nanoTime() - a);
                        }
                    } catch (IOException e) {
                        statuses.merge(0, 1, Integer::sum);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                long wall = System.nanoTime() - t0;
                ObjectNode r = n.putObject(clients + "Clients");
                r.put("clients", clients);
                r.put("documents", docs);
                r.put("wallMillis", wall / 1_000_000);
                r.put("perMinute", Math.round(latency.size() * 60e9 / wall * 10) / 10.0);
                if (!latency.isEmpty()) {
                    r.set("latency", series(new ArrayList<>(latency)));
                }
                ObjectNode st = r.putObject("statuses");
                statuses.forEach((k, v) -> st.put(Integer.toString(k), v));
                r.put("restored", pool.stats().restored());
                r.put("coldBooted", pool.stats().started());
            }
            checkpoint();
        }
    }

    /** {@code docs} runs of {@code one}, by {@code clients} threads at once, each taking the next until none is left. */
    private static void clients(int clients, int docs, Runnable one) {
        java.util.concurrent.atomic.AtomicInteger left = new java.util.concurrent.atomic.AtomicInteger(docs);
        java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(clients);
        List<CompletableFuture<Void>> running = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            running.add(CompletableFuture.runAsync(() -> {
                while (left.getAndDecrement() > 0 && !Thread.currentThread().isInterrupted()) {
                    one.run();
                }
            }, threads));
        }
        threads.shutdown();
        for (CompletableFuture<Void> f : running) {
            f.join();
        }
    }

    /** CPU of each of {@code pids} over the same {@code window}, as a percentage of one core. */
    static List<Double> cpuPercentEach(List<Long> pids, Duration window) throws IOException, InterruptedException {
        long[] a = new long[pids.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = cpuNanos(pids.get(i));
        }
        long t = System.nanoTime();
        Thread.sleep(window.toMillis());
        double seconds = (System.nanoTime() - t) / 1e9;
        List<Double> pct = new ArrayList<>();
        for (int i = 0; i < a.length; i++) {
            pct.add(Math.round((cpuNanos(pids.get(i)) - a[i]) / 1e9 / seconds * 1000) / 10.0);
        }
        return pct;
    }

    /**
     * CPU time (user + system) {@code pid} used over {@code window}, as a percentage of one core,
     * from {@link ProcessHandle.Info#totalCpuDuration()} (every OS, no {@code /proc}).
     *
     * @throws IOException when the JDK cannot tell this process's CPU time on this host
     */
    static double cpuPercent(long pid, Duration window) throws IOException, InterruptedException {
        return cpuPercentEach(List.of(pid), window).get(0);
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
        // each written aside and moved into place: a run killed mid-write keeps its last checkpoint
        replace(dir.resolve("bench.json"), JSON.writeValueAsBytes(results));
        replace(dir.resolve("bench.md"), Summary.markdown(results).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    private static void replace(Path file, byte[] content) throws IOException {
        Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
        Files.write(tmp, content);
        Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
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
