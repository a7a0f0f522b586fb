package io.qvm.release;

import io.qvm.admin.Templates;
import io.qvm.BootReport;
import io.qvm.QemuVmBackend;
import io.qvm.RenderFailedException;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.WorkerStatus;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.FileTrees;
import io.qvm.reliability.HostileDocuments;
import io.qvm.reliability.Leftovers;
import io.qvm.reliability.Reliability;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The product's gate: the staged images booted on this host with the real backend, the way a
 * server uses them. The image of the host's own architecture gets the host end-to-end suite
 * under the best accelerator the host has; an image of another architecture (aarch64 on an x86_64
 * host) boots under TCG with its own {@code qemu-system-<arch>} and gets the short one
 * ({@link Options#fullSuite()} says which gets which).
 *
 * <p>Steps of the host's architecture, named {@code <arch>:<step>}:
 * <ol>
 * <li>{@code boot}: a cold boot (no template) to the worker's READY — the boot phases and READY
 *     time are the report's;</li>
 * <li>{@code handshake}: READY answered the backend's HELLO (its nonce), and the worker answers
 *     a STATUS request;</li>
 * <li>{@code render-corpus}: the ordinary documents render (a PNG of the expected size), every
 *     hostile document of {@link HostileDocuments} is refused with its typed error, and the same
 *     sandbox is alive after all of them;</li>
 * <li>{@code clones}: a template of the staged image is built (in a directory of this gate, never
 *     the user's); two sandboxes restored from it at once each read their own random bytes, have
 *     the host's clock (within 2 s) and render;</li>
 * <li>{@code stop}: both sandboxes close, their QEMUs exit;</li>
 * <li>{@code nothing-left}: no QEMU child of this JVM, no process naming the gate's state
 *     directory, no sandbox state entry, no new socket directory in the runtime root.</li>
 * </ol>
 * Another architecture (the short suite): {@code boot}, {@code handshake}, {@code render-svg}
 * ({@code samples/hello.svg}), {@code render-pdf} ({@code samples/hello.pdf}), {@code clones}
 * (as above: every architecture's image gets templates, adr/0012), {@code stop},
 * {@code nothing-left}.
 *
 * <p>The first failed step ends the gate (the next architecture is not booted), after its
 * sandboxes are closed and {@code nothing-left} has been checked and recorded.
 */
public final class HostGate implements ReleaseGate {

    /**
     * How far a clone's clock may be from the host's: the host steps it to within its control
     * exchange's round trip (GuestControl.syncClock), and gVisor's clock follows within a second.
     */
    static final long CLOCK_SLACK_MILLIS = 2_000;
    /** How long a restored clone's worker may take to show the clock the init set (gVisor: about a second). */
    static final long CLOCK_TAKEN_UP_MILLIS = 15_000;

    /**
     * The clone's worker shows the host's clock within {@link #CLOCK_SLACK_MILLIS} once gVisor took
     * up the clock the init set at the restore, within {@link #CLOCK_TAKEN_UP_MILLIS}.
     */
    static void hostsClockSoon(Sandbox clone) {
        long until = System.nanoTime() + CLOCK_TAKEN_UP_MILLIS * 1_000_000;
        while (true) {
            long before = System.currentTimeMillis();
            WorkerStatus st = clone.status();
            long after = System.currentTimeMillis();
            if (st.wallClockMillis() >= before - CLOCK_SLACK_MILLIS && st.wallClockMillis() <= after + CLOCK_SLACK_MILLIS) {
                return;
            }
            if (System.nanoTime() > until) {
                throw new ReleaseException("clone " + clone.id() + "'s clock (" + Instant.ofEpochMilli(st.wallClockMillis())
                        + ") is not the host's (" + Instant.ofEpochMilli(before) + " .. " + Instant.ofEpochMilli(after)
                        + ") within " + CLOCK_SLACK_MILLIS + " ms, " + CLOCK_TAKEN_UP_MILLIS + " ms after its restore");
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ReleaseException("interrupted while waiting for clone " + clone.id() + "'s clock");
            }
        }
    }

    /**
     * How the gate runs.
     *
     * @param backends a fresh backend builder (the gate sets the image, state, template and
     *     guest-architecture settings and the progress)
     * @param nativeConfig the sandboxes of the host's own architecture
     * @param crossConfig the sandboxes of another architecture (TCG: longer deadlines)
     * @param stopTimeout how long a stopped QEMU may take to exit, and leftovers to go
     * @param fullSuite the architectures that get the host suite (default: the host's own); the
     *     others get the short one
     * @param runtimeRoot where the backend puts sockets (one directory per sandbox): the gate
     *     sets it on the backend and checks it is left as it was; null (the default): a fresh
     *     private directory per architecture under {@code /tmp}, removed afterwards, so that
     *     sandboxes of other programs on this host neither hide nor fake a leftover
     * @param clones whether the {@code clones} step runs (default: yes; the test suite's release,
     *     whose image is the checkout's, leaves it to the suite's own clone tests)
     */
    public record Options(Supplier<QemuVmBackend.Builder> backends, SandboxConfig nativeConfig,
            SandboxConfig crossConfig, Duration stopTimeout, Set<Arch> fullSuite, Path runtimeRoot, boolean clones) {
        public Options {
            Objects.requireNonNull(backends, "backends");
            Objects.requireNonNull(nativeConfig, "nativeConfig");
            Objects.requireNonNull(crossConfig, "crossConfig");
            Objects.requireNonNull(stopTimeout, "stopTimeout");
            fullSuite = Set.copyOf(fullSuite);
        }

        /**
         * The system's backend, deadlines generous enough for TCG on a busy 2-core host, the host
         * suite for the host's architecture, a runtime root of the gate's own.
         */
        public static Options defaults() {
            return new Options(QemuVmBackend::builder,
                    SandboxConfig.builder().bootTimeout(Duration.ofMinutes(6)).requestTimeout(Duration.ofMinutes(3))
                            .build(),
                    SandboxConfig.builder().bootTimeout(Duration.ofMinutes(12)).requestTimeout(Duration.ofMinutes(5))
                            .build(),
                    Duration.ofMinutes(1), Arch.fromOsArch(System.getProperty("os.arch")).map(Set::of).orElse(Set.of()),
                    null, true);
        }

        /** These options with {@code backends} instead. */
        public Options withBackends(Supplier<QemuVmBackend.Builder> b) {
            return new Options(b, nativeConfig, crossConfig, stopTimeout, fullSuite, runtimeRoot, clones);
        }

        /**
         * These options with the short suite for every architecture and without the {@code clones}
         * step: the gate the test suite's release runs (its image is the checkout's, whose
         * hostile corpus and clones the suite proves in tests of their own).
         */
        public Options quick() {
            return new Options(backends, nativeConfig, crossConfig, stopTimeout, Set.of(), runtimeRoot, false);
        }
    }

    private final Options options;

    public HostGate(Options options) {
        this.options = Objects.requireNonNull(options, "options");
    }

    @Override
    public String name() {
        return "host";
    }

    @Override
    public GateResult run(StagedImages images, Consumer<String> progress) {
        List<ReleaseStep> steps = new ArrayList<>();
        List<GateResult.Boot> boots = new ArrayList<>();
        for (Arch arch : images.archs()) {
            boolean ok = new ArchRun(images, arch, options.fullSuite().contains(arch), progress, steps, boots).run();
            if (!ok) {
                break;
            }
        }
        return new GateResult(name(), steps, boots);
    }

    /** The steps of one architecture. */
    private final class ArchRun {
        final StagedImages images;
        final Arch arch;
        final boolean full;
        final Consumer<String> progress;
        final List<ReleaseStep> steps;
        final List<GateResult.Boot> boots;
        final SandboxConfig config;
        final List<QemuVmBackend> backends = new ArrayList<>();
        final List<Sandbox> sandboxes = new ArrayList<>();
        Path state;
        Path runtime;
        boolean ownRuntime;
        Set<String> socketsBefore;

        ArchRun(StagedImages images, Arch arch, boolean full, Consumer<String> progress, List<ReleaseStep> steps,
                List<GateResult.Boot> boots) {
            this.images = images;
            this.arch = arch;
            this.full = full;
            this.progress = progress;
            this.steps = steps;
            this.boots = boots;
            this.config = full ? options.nativeConfig() : options.crossConfig();
        }

        boolean run() {
            boolean ok = false;
            try {
                state = Files.createTempDirectory("qvm-gate-" + arch.id() + "-");
                ownRuntime = options.runtimeRoot() == null;
                // Short, as socket paths must be (SocketPaths.MAX_SOCKET_PATH_BYTES); 0700 from creation.
                runtime = ownRuntime ? Files.createTempDirectory(Files.isDirectory(Path.of("/tmp")) ? Path.of("/tmp")
                        : Path.of(System.getProperty("java.io.tmpdir")), "qvm-gate-") : options.runtimeRoot();
                socketsBefore = Leftovers.socketDirectories(runtime);
                ok = step("boot", this::boot)
                        && step("handshake", this::handshake)
                        && (full ? step("render-corpus", this::renderCorpus)
                                : step("render-svg", () -> render("hello.svg", RenderRequest.svg(
                                        Reliability.resource("warmup/hello.svg"))))
                                && step("render-pdf", () -> render("hello.pdf", RenderRequest.pdf(
                                        Reliability.resource("warmup/hello.pdf")))))
                        && (!options.clones() || step("clones", this::clonesFromTemplate))
                        && step("stop", this::stop);
            } catch (IOException e) {
                steps.add(ReleaseStep.failed(arch.id() + ":boot", 0, "cannot create the gate's state directory: " + e));
            } finally {
                closeAll();
                if (state != null && runtime != null) {
                    ok &= step("nothing-left", this::nothingLeft);
                }
                if (state != null) {
                    FileTrees.deleteQuietly(state);
                }
                if (ownRuntime && runtime != null) {
                    FileTrees.deleteQuietly(runtime);
                }
            }
            return ok;
        }

        boolean step(String name, Supplier<String> body) {
            String full = arch.id() + ":" + name;
            progress.accept(full + " …");
            long t0 = System.nanoTime();
            ReleaseStep s;
            try {
                String evidence = body.get();
                s = ReleaseStep.passed(full, (System.nanoTime() - t0) / 1_000_000, evidence);
            } catch (RuntimeException e) {
                s = ReleaseStep.failed(full, (System.nanoTime() - t0) / 1_000_000,
                        e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            steps.add(s);
            progress.accept((s.ok() ? "ok " : "FAILED ") + full);
            return s.ok();
        }

        QemuVmBackend backend(boolean templates) {
            // The gate's own class archives: its cold boot makes the image's, its template boot uses
            // it (adr/0018), and the host's cache is left as it was.
            QemuVmBackend.Builder b = options.backends().get().imageDir(images.root()).guestArch(arch)
                    .runtimeDirectory(runtime).classArchiveDirectory(state.resolve("class-archives"))
                    .stateDirectory(state.resolve(templates ? "clones" : "cold")).templates(templates)
                    .progress(line -> progress.accept(arch.id() + ": " + line));
            if (templates) {
                b.templateDirectory(state.resolve("templates"));
            }
            QemuVmBackend backend = b.build();
            backends.add(backend);
            return backend;
        }

        Sandbox first() {
            return sandboxes.get(0);
        }

        String boot() {
            Sandbox s = backend(false).start(config);
            sandboxes.add(s);
            BootReport r = s.bootReport();
            List<GateResult.Phase> phases = new ArrayList<>();
            for (Map.Entry<String, Duration> p : r.phases().entrySet()) {
                phases.add(new GateResult.Phase(p.getKey(), p.getValue().toMillis()));
            }
            boots.add(new GateResult.Boot(arch, r.accelerator(), r.machine(), phases, r.total().toMillis()));
            return "READY after " + r.total().toMillis() + " ms on " + r.accelerator() + " (" + r.machine() + ", "
                    + r.transport() + "); phases " + phases + (r.notes().isEmpty() ? "" : "; notes " + r.notes());
        }

        String handshake() {
            Sandbox s = first();
            if (s.bootReport().phase("worker-ready").isEmpty()) {
                throw new ReleaseException("the boot report has no worker-ready phase: " + s.bootReport());
            }
            WorkerStatus st = s.status();
            if (st.requestsServed() < 0 || st.random() == null) {
                throw new ReleaseException("the worker's STATUS answer is not sound: " + st);
            }
            return "READY answered the HELLO; STATUS: " + st;
        }

        String render(String name, RenderRequest request) {
            RenderResult r = first().render(request);
            if (r.width() <= 0 || r.height() <= 0 || r.png().length == 0) {
                throw new ReleaseException(name + " rendered to an empty image: " + r);
            }
            return name + " → " + r.width() + "x" + r.height() + " PNG, " + r.png().length + " bytes in "
                    + r.renderMillis() + " ms";
        }

        String renderCorpus() {
            List<String> seen = new ArrayList<>();
            seen.add(render("hello.svg", RenderRequest.svg(Reliability.resource("warmup/hello.svg"))));
            seen.add(render("hello.pdf", RenderRequest.pdf(Reliability.resource("warmup/hello.pdf"))));
            for (HostileDocuments.Case c : HostileDocuments.all()) {
                String got;
                try {
                    RenderResult r = first().render(c.request());
                    got = "rendered " + r.width() + "x" + r.height();
                } catch (RenderFailedException e) {
                    got = e.code().name();
                }
                if (!got.equals(c.expected())) {
                    throw new ReleaseException("hostile document " + c.name() + " must be refused with "
                            + c.expected() + ", got " + got + " (so far: " + seen + ")");
                }
                seen.add(c.name() + " → " + got);
            }
            if (!first().isAlive()) {
                throw new ReleaseException("the sandbox did not survive the corpus: " + seen);
            }
            return seen.size() + " documents, the same sandbox throughout: " + String.join("; ", seen);
        }

        /**
         * A template, then two clones of it started at once: each restored (never cold-booted),
         * each reading its own randomness from {@code /dev/urandom} and, once gVisor took up the
         * clock the init set, the host's clock (within {@link #CLOCK_SLACK_MILLIS}), each rendering.
         */
        String clonesFromTemplate() {
            QemuVmBackend b = backend(true);
            Templates.TemplateInfo t = b.admin().buildTemplate(config);
            List<CompletableFuture<Sandbox>> starts = List.of(CompletableFuture.supplyAsync(() -> b.start(config)),
                    CompletableFuture.supplyAsync(() -> b.start(config)));
            List<Sandbox> clones = new ArrayList<>();
            RuntimeException failure = null;
            for (CompletableFuture<Sandbox> f : starts) { // both are awaited, so that neither is left unclosed
                try {
                    Sandbox s = f.join();
                    clones.add(s);
                    sandboxes.add(s);
                } catch (CompletionException e) {
                    failure = e.getCause() instanceof RuntimeException r ? r : e;
                }
            }
            if (failure != null) {
                throw failure;
            }
            for (Sandbox c : clones) {
                if (!c.bootReport().restored()) {
                    throw new ReleaseException("sandbox " + c.id() + " was not restored from template " + t.id()
                            + " but cold-booted: " + c.bootReport());
                }
            }
            WorkerStatus a = clones.get(0).status();
            WorkerStatus c = clones.get(1).status();
            if (a.random().equals(c.random())) {
                throw new ReleaseException("two clones of template " + t.id() + " read the same bytes from /dev/urandom ("
                        + a.random() + "): the guest's randomness was not reseeded after the restore");
            }
            for (Sandbox clone : clones) {
                hostsClockSoon(clone);
            }
            List<String> seen = new ArrayList<>();
            for (Sandbox clone : clones) {
                RenderResult r = clone.render(RenderRequest.svg(Reliability.resource("warmup/hello.svg")));
                seen.add(clone.id() + " ready after " + clone.bootReport().total().toMillis() + " ms, rendered hello.svg "
                        + r.width() + "x" + r.height());
            }
            return "template " + t.id() + " (" + t.mode() + "); two clones at once, random " + a.random() + " ≠ "
                    + c.random() + ", clocks within " + CLOCK_SLACK_MILLIS + " ms of the host's; " + String.join("; ", seen);
        }

        String stop() {
            List<String> out = new ArrayList<>();
            for (Sandbox s : sandboxes) {
                long t0 = System.nanoTime();
                s.close();
                try {
                    s.onExit().get(options.stopTimeout().toMillis(), TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    throw new ReleaseException("sandbox " + s.id() + " did not stop within " + options.stopTimeout()
                            + ": " + e);
                }
                out.add(s.id() + " stopped in " + (System.nanoTime() - t0) / 1_000_000 + " ms");
            }
            return String.join("; ", out);
        }

        void closeAll() {
            for (Sandbox s : sandboxes) {
                try {
                    s.close();
                } catch (RuntimeException e) {
                    progress.accept(arch.id() + ": closing " + s.id() + ": " + e);
                }
            }
            for (QemuVmBackend b : backends) {
                try {
                    b.close();
                } catch (RuntimeException e) {
                    progress.accept(arch.id() + ": closing the backend: " + e);
                }
            }
        }

        /** Waits up to the stop timeout for leftovers to go; what is still there is killed and named. */
        String nothingLeft() {
            long deadline = System.nanoTime() + options.stopTimeout().toNanos();
            List<String> left = leftovers();
            while (!left.isEmpty() && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
                left = leftovers();
            }
            if (!left.isEmpty()) {
                killLeftoverProcesses();
                throw new ReleaseException("left running or behind after the gate: " + left);
            }
            return "no QEMU child, no process naming " + state + ", no sandbox state entry, no new socket directory in "
                    + runtime;
        }

        List<String> leftovers() {
            List<String> out = new ArrayList<>();
            ProcessHandle.current().descendants().filter(p -> p.isAlive() && command(p).contains("qemu-system"))
                    .forEach(p -> out.add("QEMU child pid " + p.pid()));
            Leftovers.processesNaming(state)
                    .forEach(p -> out.add("pid " + p.pid() + " naming " + state.toAbsolutePath()));
            for (String dir : List.of("cold", "clones")) {
                Path sandboxesDir = state.resolve(dir).resolve("sandboxes");
                if (Files.isDirectory(sandboxesDir)) {
                    try (Stream<Path> s = Files.list(sandboxesDir)) {
                        s.forEach(p -> out.add("state entry " + p));
                    } catch (IOException e) {
                        out.add("unreadable " + sandboxesDir + ": " + e);
                    }
                }
            }
            Set<String> sockets = Leftovers.socketDirectories(runtime);
            sockets.removeAll(socketsBefore);
            sockets.forEach(s -> out.add("socket directory " + s));
            return out;
        }

        void killLeftoverProcesses() {
            Leftovers.processesNaming(state).forEach(ProcessHandle::destroyForcibly);
        }
    }

    private static String command(ProcessHandle p) {
        return p.info().commandLine().orElse("");
    }
}
