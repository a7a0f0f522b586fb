package io.qvm.reliability;

import io.qvm.admin.BackendAdmin;
import io.qvm.admin.SandboxStates;
import io.qvm.BootFailedException;
import io.qvm.QemuVmBackend;
import io.qvm.RenderFailedException;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.SandboxException;
import io.qvm.SandboxLostException;
import io.qvm.SandboxPool;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.util.PrivateDirectory;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * qvm's reliability run: real sandboxes on this host, driven through the public API the way a
 * server drives them, each category counting what held and what was lost, and what was left
 * behind. Figures are data; the test suite runs a small slice and asserts only that nothing was
 * lost or left.
 *
 * <ul>
 * <li>{@code boot}: cold boots (no template) to READY; every failed attempt the backend retried
 *     is counted with the worker's exit status (the backend hides one failure per sandbox);</li>
 * <li>{@code render}: ordinary SVG and PDF renders in one reused sandbox (replaced when lost);</li>
 * <li>{@code load}: requests through a {@link SandboxPool} from several callers at once, a share
 *     of them hostile documents ({@link HostileDocuments#load()}) that must be refused or must
 *     end at a deadline (the worker's {@code TIMEOUT}, or the host stopping the sandbox at its
 *     own: {@link HostileDocuments.Case#accepts}); the request deadline is at most
 *     {@link #LOAD_REQUEST_TIMEOUT} here, so a time-out costs that long; the host JVM's heap and
 *     open descriptors before and after;</li>
 * <li>{@code fault}: QEMU killed (SIGKILL) and frozen (SIGSTOP) while a request is in flight:
 *     the caller must get a {@link SandboxLostException} and the VM must be gone;</li>
 * <li>{@code serve}: the load's mix over real HTTP through {@code qvm serve}'s server, from
 *     several clients for two tenants, with a forged token among the hostile ({@link ServeLoad}).</li>
 * </ul>
 * Held: the caller got a result or the typed error the case expects. Lost: anything else (an
 * untyped exception, a sandbox lost where none should be, a request that never returned).
 * Orphans: QEMU processes, state or socket entries of this run left after a category.
 */
public final class Reliability {

    /**
     * What to run.
     *
     * @param boots cold boots in {@code boot}
     * @param renders renders in {@code render}
     * @param loadRequests requests in {@code load}
     * @param callers concurrent callers in {@code load}
     * @param hostileEvery one request in this many is hostile in {@code load}
     * @param faults rounds of each fault in {@code fault}
     * @param serveRequests requests over HTTP in {@code serve}
     * @param serveClients concurrent HTTP clients in {@code serve}
     */
    public record Options(int boots, int renders, int loadRequests, int callers, int hostileEvery, int faults,
            int serveRequests, int serveClients) {
        /**
         * What the issues ask of a full run: 50 boots, 2,000 renders, 1,000 load requests (2
         * callers, 10 % hostile), 200 requests over HTTP from 4 clients (10 % hostile).
         */
        public static Options full() {
            return new Options(50, 2000, 1000, 2, 10, 5, 200, 4);
        }

        /**
         * The slice the test suite runs: one boot, 10 renders, 10 load requests, one in five hostile
         * (a time-out, then a refused document), a round of faults, and 6 requests over HTTP from 2
         * clients (a forged token among them). Each load and HTTP request is a fresh clone: under
         * TCG on 2 cores that is seconds each, so the slice is kept small (the suite's budget).
         */
        public static Options slice() {
            return new Options(1, 10, 10, 2, 5, 1, 6, 2);
        }
    }

    /** One category's counts. */
    public record Category(String name, int tried, int held, int lost, int orphans, Map<String, Integer> outcomes,
            List<String> notes, Duration took) {
    }

    /** The whole run. */
    public record Report(Instant started, Duration took, Options options, List<String> confinements,
            List<Category> categories) {
        /** Whether every category held every case and left nothing behind. */
        public boolean allHeld() {
            return categories.stream().allMatch(c -> c.lost() == 0 && c.orphans() == 0 && c.held() == c.tried());
        }
    }

    private final Supplier<QemuVmBackend.Builder> backends;
    private final Path stateRoot;
    private final SandboxConfig config;
    private final Consumer<String> progress;

    /**
     * @param backends a fresh backend builder (image, templates, progress as the caller likes);
     *     this run sets its state directory
     * @param stateRoot an empty directory of this run, for the sandboxes' state
     * @param config the sandboxes' configuration (deadlines generous enough for the host)
     */
    public Reliability(Supplier<QemuVmBackend.Builder> backends, Path stateRoot, SandboxConfig config,
            Consumer<String> progress) {
        this.backends = backends;
        this.stateRoot = stateRoot;
        this.config = config;
        this.progress = progress;
    }

    public Report run(Options o) throws IOException {
        Instant t0 = Instant.now();
        List<Category> cats = new ArrayList<>();
        List<String> confinements = new ArrayList<>();
        cats.add(boot(o, confinements));
        cats.add(render(o));
        cats.add(load(o, confinements));
        cats.add(fault(o));
        cats.add(serve(o));
        return new Report(t0, Duration.between(t0, Instant.now()), o, confinements, cats);
    }

    // ---- categories -----------------------------------------------------------------------------

    private Category boot(Options o, List<String> confinements) throws IOException {
        Tally t = new Tally("boot");
        Path dir = PrivateDirectory.ensure(stateRoot.resolve("boot"));
        java.util.Set<String> socketsBefore = socketDirectories();
        try (QemuVmBackend backend = backends.get().stateDirectory(dir).templates(false).build()) {
            for (int i = 0; i < o.boots(); i++) {
                t.tried++;
                try (Sandbox s = backend.start(config)) {
                    s.bootReport().notes().stream().filter(n -> n.startsWith("boot attempt"))
                            .forEach(n -> t.outcome("retried: " + n.replaceAll(".*(status \\d+).*", "$1")));
                    if (confinements.isEmpty()) {
                        confinements.addAll(Confinements.of(BackendAdmin.qemuPid(s).orElseThrow()));
                    }
                    t.held++;
                    t.outcome("ready");
                } catch (BootFailedException e) {
                    t.lost++;
                    t.outcome("boot failed" + e.workerExitStatus().map(st -> ": status " + st).orElse(""));
                    t.notes.add(firstLine(e));
                }
                say(t.name + " " + (i + 1) + "/" + o.boots() + " " + t.outcomes);
            }
        }
        return t.done(orphans(dir, socketsBefore));
    }

    private Category render(Options o) throws IOException {
        Tally t = new Tally("render");
        Path dir = PrivateDirectory.ensure(stateRoot.resolve("render"));
        java.util.Set<String> socketsBefore = socketDirectories();
        List<RenderRequest> docs = List.of(RenderRequest.svg(resource("warmup/hello.svg")),
                RenderRequest.pdf(resource("warmup/hello.pdf")));
        try (QemuVmBackend backend = backends.get().stateDirectory(dir).build()) {
            Sandbox s = null;
            try {
                for (int i = 0; i < o.renders(); i++) {
                    if (s == null || !s.isAlive()) {
                        s = backend.start(config);
                    }
                    t.tried++;
                    try {
                        s.render(docs.get(i % docs.size()));
                        t.held++;
                        t.outcome("rendered");
                    } catch (SandboxLostException e) {
                        t.lost++;
                        t.outcome("lost: " + e.reason() + e.workerExitStatus().map(st -> " status " + st).orElse(""));
                        t.notes.add("render " + i + ": " + firstLine(e));
                        s.close();
                        s = null;
                    } catch (SandboxException e) {
                        t.lost++;
                        t.outcome("failed: " + e.getClass().getSimpleName());
                        t.notes.add("render " + i + ": " + firstLine(e));
                    }
                    if ((i + 1) % 100 == 0 || i + 1 == o.renders()) {
                        say(t.name + " " + (i + 1) + "/" + o.renders() + " " + t.outcomes);
                    }
                }
            } finally {
                if (s != null) {
                    s.close();
                }
            }
        }
        return t.done(orphans(dir, socketsBefore));
    }

    private Category load(Options o, List<String> confinements) throws IOException {
        Tally t = new Tally("load");
        Path dir = PrivateDirectory.ensure(stateRoot.resolve("load"));
        java.util.Set<String> socketsBefore = socketDirectories();
        List<RenderRequest> ordinary = List.of(RenderRequest.svg(resource("warmup/hello.svg")),
                RenderRequest.pdf(resource("warmup/hello.pdf")));
        List<HostileDocuments.Case> hostile = HostileDocuments.load();
        SandboxConfig loadConfig = config.requestTimeout().compareTo(LOAD_REQUEST_TIMEOUT) <= 0 ? config
                : config.newBuilder().requestTimeout(LOAD_REQUEST_TIMEOUT).build();
        long heapBefore = usedHeapAfterGc();
        long fdsBefore = openDescriptors();
        AtomicInteger next = new AtomicInteger();
        Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        List<String> notes = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicInteger held = new AtomicInteger();
        AtomicInteger lost = new AtomicInteger();
        try (QemuVmBackend backend = backends.get().stateDirectory(dir).build();
                SandboxPool pool = SandboxPool.builder(backend, loadConfig).maxSandboxes(o.callers()).minIdle(1)
                        .recycle(SandboxPool.Recycle.perRequest()).build()) {
            if (confinements.isEmpty() && o.loadRequests() > 0) { // a run without boots: read them off a pooled sandbox
                try {
                    pool.withSandbox(s -> confinements.addAll(Confinements.of(BackendAdmin.qemuPid(s).orElseThrow())));
                } catch (SandboxException e) {
                    notes.add("confinements not read: " + firstLine(e));
                }
            }
            ExecutorService callers = Executors.newFixedThreadPool(o.callers());
            List<Future<?>> running = new ArrayList<>();
            for (int c = 0; c < o.callers(); c++) {
                running.add(callers.submit(() -> {
                    for (int i; (i = next.getAndIncrement()) < o.loadRequests(); ) {
                        String got;
                        boolean ok;
                        if (i % o.hostileEvery() == o.hostileEvery() - 1) {
                            HostileDocuments.Case h = hostile.get((i / o.hostileEvery()) % hostile.size());
                            got = outcome(() -> pool.render(h.request()));
                            ok = h.accepts(got);
                            got = h.name() + " " + got;
                        } else {
                            RenderRequest r = ordinary.get(i % ordinary.size());
                            got = outcome(() -> pool.render(r));
                            ok = got.equals("OK");
                        }
                        outcomes.computeIfAbsent(got, k -> new AtomicInteger()).incrementAndGet();
                        (ok ? held : lost).incrementAndGet();
                        if (!ok) {
                            notes.add("request " + i + ": " + got);
                        }
                        if ((i + 1) % 50 == 0) {
                            say("load " + (i + 1) + "/" + o.loadRequests());
                        }
                    }
                }));
            }
            for (Future<?> f : running) {
                try {
                    f.get();
                } catch (Exception e) {
                    lost.incrementAndGet();
                    notes.add("a caller failed: " + e);
                }
            }
            callers.shutdown();
            notes.add("pool: " + pool.stats());
        }
        t.tried = o.loadRequests();
        t.held = held.get();
        t.lost = lost.get();
        outcomes.forEach((k, v) -> t.outcomes.put(k, v.get()));
        t.notes.addAll(notes);
        return t.done(orphans(dir, socketsBefore) + flatness(t, heapBefore, fdsBefore));
    }

    /**
     * Notes this JVM's heap after GC and open descriptors against {@code heapBefore} and
     * {@code fdsBefore}; returns what leaked ({@link #leaks}), which the caller counts as orphans.
     */
    private static int flatness(Tally t, long heapBefore, long fdsBefore) {
        long heapAfter = usedHeapAfterGc();
        long fdsAfter = openDescriptors();
        t.notes.add("host heap after GC: " + (heapBefore >> 20) + " MiB before, " + (heapAfter >> 20)
                + " MiB after; open descriptors: " + fdsBefore + " before, " + fdsAfter + " after");
        int leaks = leaks(heapBefore, heapAfter, fdsBefore, fdsAfter);
        if (leaks > 0) {
            t.notes.add("not flat: " + leaks + " leaked (descriptors past " + FD_SLACK + " more than at the start, "
                    + "or the heap after GC grown by more than " + (HEAP_SLACK >> 20) + " MiB), counted as orphans");
        }
        return leaks;
    }

    /** {@link ServeLoad}: the same mix over real HTTP through {@code qvm serve}'s server, two tenants. */
    private Category serve(Options o) throws IOException {
        Tally t = new Tally("serve");
        if (o.serveRequests() <= 0) {
            return t.done(0);
        }
        Path dir = PrivateDirectory.ensure(stateRoot.resolve("serve"));
        java.util.Set<String> socketsBefore = socketDirectories();
        SandboxConfig serveConfig = config.requestTimeout().compareTo(LOAD_REQUEST_TIMEOUT) <= 0 ? config
                : config.newBuilder().requestTimeout(LOAD_REQUEST_TIMEOUT).build();
        long heapBefore = usedHeapAfterGc();
        long fdsBefore = openDescriptors();
        ServeLoad.Result r;
        try (QemuVmBackend backend = backends.get().stateDirectory(dir).build()) {
            r = ServeLoad.run(backend, serveConfig, o.serveRequests(), o.serveClients(), o.hostileEvery(), this::say);
        }
        t.tried = r.tried();
        t.held = r.held();
        t.lost = r.lost();
        t.outcomes.putAll(r.outcomes());
        t.notes.addAll(r.notes());
        return t.done(orphans(dir, socketsBefore) + flatness(t, heapBefore, fdsBefore));
    }

    private Category fault(Options o) throws IOException {
        Tally t = new Tally("fault");
        Path dir = PrivateDirectory.ensure(stateRoot.resolve("fault"));
        java.util.Set<String> socketsBefore = socketDirectories();
        SandboxConfig short_ = config.newBuilder().requestTimeout(Duration.ofSeconds(30)).build();
        byte[] slow = HostileDocuments.slowSvg();
        try (QemuVmBackend backend = backends.get().stateDirectory(dir).build()) {
            for (int round = 0; round < o.faults(); round++) {
                for (String signal : new String[] {"KILL", "STOP"}) {
                    t.tried++;
                    try (Sandbox s = backend.start(short_)) {
                        long pid = BackendAdmin.qemuPid(s).orElseThrow();
                        Thread killer = new Thread(() -> {
                            sleep(Duration.ofMillis(300));
                            signal(pid, signal);
                        });
                        killer.start();
                        String got = outcome(() -> s.render(RenderRequest.svg(slow)));
                        killer.join();
                        s.close();
                        boolean gone = ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true);
                        if (signal.equals("STOP") && !gone) {
                            signal(pid, "KILL");
                        }
                        boolean ok = got.startsWith("LOST") && gone;
                        if (ok) {
                            t.held++;
                        } else {
                            t.lost++;
                        }
                        t.outcome("SIG" + signal + ": " + got + (gone ? "" : ", QEMU still running"));
                    } catch (SandboxException | InterruptedException e) {
                        t.lost++;
                        t.outcome("SIG" + signal + ": " + e.getClass().getSimpleName());
                        t.notes.add(firstLine(e));
                    }
                }
                say(t.name + " round " + (round + 1) + "/" + o.faults() + " " + t.outcomes);
            }
        }
        return t.done(orphans(dir, socketsBefore));
    }

    // ---- helpers --------------------------------------------------------------------------------

    /** OK, the typed error's code, LOST (the sandbox was lost), or UNTYPED (anything else). */
    private static String outcome(Supplier<?> call) {
        try {
            call.get();
            return "OK";
        } catch (RenderFailedException e) {
            return e.code().name();
        } catch (SandboxLostException e) {
            return "LOST " + e.reason();
        } catch (SandboxException e) {
            return "TYPED " + e.getClass().getSimpleName();
        } catch (RuntimeException e) {
            return "UNTYPED " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /**
     * What a category left: QEMU processes whose command line names its state directory (killed
     * here), sandbox state entries under it, and socket directories that appeared in the runtime
     * root while it ran ({@code socketsBefore}: the names there when it began).
     */
    private static int orphans(Path dir, java.util.Set<String> socketsBefore) throws IOException {
        List<ProcessHandle> qemus = Leftovers.processesNaming(dir);
        qemus.forEach(ProcessHandle::destroyForcibly);
        long entries = 0;
        Path sandboxes = dir.resolve("sandboxes");
        if (Files.isDirectory(sandboxes)) {
            try (Stream<Path> s = Files.list(sandboxes)) {
                entries = s.count();
            }
        }
        java.util.Set<String> sockets = socketDirectories();
        sockets.removeAll(socketsBefore);
        return (int) (qemus.size() + entries + sockets.size());
    }

    /** The names in the runtime root of sockets (one directory per live sandbox). */
    static java.util.Set<String> socketDirectories() {
        return Leftovers.socketDirectories(SandboxStates.defaultRuntimeRoot());
    }

    /**
     * The load's request deadline (unless the run's is shorter): an ordinary render of the load
     * took 1 to 5 s here in a freshly restored clone under TCG; a document that times out takes
     * all of it (the worker's own deadline is 19 s of it).
     */
    static final Duration LOAD_REQUEST_TIMEOUT = Duration.ofSeconds(20);

    /** Descriptors the JVM may open once and keep (a jar read for the first time) without a leak. */
    static final int FD_SLACK = 8;
    /** Heap growth after GC that is not a leak (caches warming up). */
    static final long HEAP_SLACK = 64L << 20;

    /**
     * What the load left behind in this JVM: each descriptor open past {@link #FD_SLACK} more than at
     * the start, plus one if the heap after GC grew by more than {@link #HEAP_SLACK}. A host that
     * stays flat over the whole load scores 0.
     */
    static int leaks(long heapBefore, long heapAfter, long fdsBefore, long fdsAfter) {
        long fds = Math.max(0, fdsAfter - fdsBefore - FD_SLACK);
        return (int) Math.min(Integer.MAX_VALUE, fds + (heapAfter - heapBefore > HEAP_SLACK ? 1 : 0));
    }

    private static long usedHeapAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** This JVM's open descriptors, from the JDK (Linux and macOS; -1 where it cannot tell: Windows). */
    static long openDescriptors() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean unix
                ? unix.getOpenFileDescriptorCount() : -1;
    }

    private static void signal(long pid, String signal) {
        try {
            new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start().waitFor();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A resource of the backend's package ({@code io/qvm/<name>}), e.g. {@code warmup/hello.svg}. */
    public static byte[] resource(String name) {
        try (InputStream in = SandboxPool.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("missing resource io/qvm/" + name);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String firstLine(Throwable e) {
        String m = String.valueOf(e.getMessage());
        int nl = m.indexOf('\n');
        return e.getClass().getSimpleName() + ": " + (nl < 0 ? m : m.substring(0, nl));
    }

    private void say(String line) {
        progress.accept(line);
    }

    /** Mutable counts of one category while it runs. */
    private static final class Tally {
        final String name;
        final long t0 = System.nanoTime();
        int tried;
        int held;
        int lost;
        final Map<String, Integer> outcomes = new TreeMap<>();
        final List<String> notes = new ArrayList<>();

        Tally(String name) {
            this.name = name;
        }

        void outcome(String o) {
            outcomes.merge(o, 1, Integer::sum);
        }

        Category done(int orphans) {
            return new Category(name, tried, held, lost, orphans, Map.copyOf(outcomes),
                    List.copyOf(notes.subList(0, Math.min(notes.size(), 50))),
                    Duration.ofNanos(System.nanoTime() - t0));
        }
    }
}
