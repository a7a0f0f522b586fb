package io.qvm.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.SandboxPool;
import io.qvm.internal.template.Template;
import io.qvm.internal.template.TemplateStore;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.WorkerStatus;
import io.qvm.protocol.image.Arch;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real QEMU, the real image: a template built once, clones restored from it — each with its own
 * randomness and the host's clock, each rendering; a tampered template refused and rebuilt; a
 * per-request pool whose every document gets a clone of its own.
 */
@Tag("e2e")
@Tag("qemu")
@Timeout(value = 20, unit = java.util.concurrent.TimeUnit.MINUTES)
class CloneE2ETest {

    @TempDir
    Path state;

    final List<String> progress = new CopyOnWriteArrayList<>();
    QemuVmBackend backend;

    QemuVmBackend backend() {
        return backend(true);
    }

    /** This test's backend, its template VMs warmed before they are saved or not ({@code templateWarmUp}). */
    QemuVmBackend backend(boolean warmUp) {
        backend = QemuVmBackend.builder().imageDir(E2e.imageRoot()).stateDirectory(state)
                .templateDirectory(E2e.templateRoot()).templateWarmUp(warmUp).progress(line -> {
                    progress.add(line);
                    E2e.log(line);
                }).build();
        return backend;
    }

    @AfterEach
    void tearDown() {
        if (backend != null) {
            backend.close();
        }
        await().atMost(Duration.ofMinutes(1)).until(() -> E2e.processesMentioning(state.toString()).isEmpty());
    }

    static RenderRequest svg(int i) {
        String doc = "<svg xmlns='http://www.w3.org/2000/svg' width='" + (40 + i) + "' height='30'>"
                + "<rect width='100%' height='100%' fill='#" + String.format("%06x", i * 40503 & 0xffffff) + "'/></svg>";
        return RenderRequest.svg(doc.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void twoClonesAtOnceHaveTheirOwnRandomnessAndTheHostsClockAndBothRender() throws Exception {
        QemuVmBackend b = backend();
        SandboxConfig config = E2e.config().build();
        Template t = E2e.buildTemplate(b, config);
        E2e.log("template " + t.id() + " " + t.meta().mode() + " in " + t.dir());
        boolean arm = b.guestArch() == Arch.AARCH64; // the host's own architecture
        twoClonesAtOnce(b, config, t, arm ? "virt" : "q35",
                arm ? "CRNG reseeded by the host's seed" : "CRNG reseeded by vmgenid and the host's seed");
    }

    /**
     * An aarch64 guest on QEMU's {@code virt}, which has no vmgenid device, under TCG: a template,
     * then two clones at once, each reseeded by a seed of the host's through the init
     * (adr/0012), each with randomness of its own, the host's clock and a render. The rest of
     * the aarch64 proof (boot, SVG and PDF, stop, nothing left; the corpus with {@code --full})
     * is {@code qvm selftest --arch aarch64}.
     */
    @Test
    void aarch64ClonesOfAVirtTemplateAreReseededByTheHostHaveTheirOwnRandomnessAndBothRender() throws Exception {
        backend = QemuVmBackend.builder().imageDir(E2e.imageRoot(Arch.AARCH64)).guestArch(Arch.AARCH64)
                .stateDirectory(state).templateDirectory(E2e.templateRoot()).progress(line -> {
                    progress.add(line);
                    E2e.log(line);
                }).build();
        // 4 min a boot: the aarch64 boots that reach READY here take 113-153 s
        SandboxConfig config = E2e.config().bootTimeout(java.time.Duration.ofMinutes(4)).build();
        Template t = null;
        for (int attempt = 1; t == null; attempt++) {
            try {
                t = E2e.buildTemplate(backend, config);
            } catch (io.qvm.internal.template.TemplateException e) {
                // An emulated aarch64 boot fails now and then on its own (README, known problems:
                // the worker's JVM silent, runsc exiting 1, or end of input before HELLO), about
                // one boot in three here. The template boot is not what this test proves: it is
                // tried up to three times, each failure logged; the clones' checks are unchanged.
                if (!(e.getCause() instanceof io.qvm.BootFailedException) || attempt >= 3) {
                    throw e;
                }
                E2e.log("aarch64 template boot attempt " + attempt + " failed, trying again: "
                        + e.getCause().getMessage().lines().findFirst().orElse(""));
            }
        }
        E2e.log("aarch64 template " + t.id() + " " + t.meta().mode() + " in " + t.dir());
        twoClonesAtOnce(backend, config, t, "virt", "CRNG reseeded by the host's seed");
    }

    /**
     * Two clones of {@code t} started at once: each restored (not booted) on {@code machine}, its
     * boot report naming {@code reseeds}; different bytes from {@code /dev/urandom}, the host's
     * clock within 2 s, and both render.
     */
    private static void twoClonesAtOnce(QemuVmBackend b, SandboxConfig config, Template t, String machine,
            String reseeds) throws Exception {
        CompletableFuture<Sandbox> first = CompletableFuture.supplyAsync(() -> b.start(config));
        CompletableFuture<Sandbox> second = CompletableFuture.supplyAsync(() -> b.start(config));
        try (Sandbox one = first.get(); Sandbox two = second.get()) {
            for (Sandbox s : List.of(one, two)) {
                E2e.log("clone " + s.id() + ": " + s.bootReport());
                assertEquals(t.id(), s.bootReport().template().orElseThrow(), "restored from the template, not booted");
                assertTrue(s.bootReport().phase("guest:runsc").isEmpty(), "a clone does not boot the guest");
                assertEquals(machine, s.bootReport().machine());
                assertTrue(s.bootReport().notes().stream().anyMatch(n -> n.contains(reseeds)),
                        reseeds + ": " + s.bootReport().notes());
            }
            WorkerStatus a = one.status();
            WorkerStatus c = two.status();
            E2e.log("status " + one.id() + ": " + a + "; " + two.id() + ": " + c);
            assertNotEquals(a.random(), c.random(), "two clones of one template read different bytes from /dev/urandom");
            // The host steps the clone's clock to its own (to within a control round trip); gVisor takes it
            // up at its next calibration (about a second): then the worker's clock is the host's, give or take 2 s.
            for (Sandbox s : List.of(one, two)) {
                long since = System.nanoTime();
                await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).until(() -> {
                    long before = System.currentTimeMillis();
                    WorkerStatus st = s.status();
                    long after = System.currentTimeMillis();
                    return st.wallClockMillis() >= before - 2_000 && st.wallClockMillis() <= after + 2_000;
                });
                E2e.log("clone " + s.id() + ": worker clock the host's within 2 s, "
                        + (System.nanoTime() - since) / 1_000_000 + " ms after its first STATUS");
            }
            assertNotEquals(a.random(), one.status().random(), "and a clone's next read differs too");
            RenderResult r1 = one.render(svg(1));
            RenderResult r2 = two.render(svg(2));
            assertEquals(41, r1.width());
            assertEquals(42, r2.width());
            assertEquals(30, r2.height());
        }
    }

    /**
     * {@link SandboxConfig#idlePause()} on the real guest: an idle clone is stopped (its QEMU's
     * CPU time stands still: a running idle clone takes a third of a core here), and the next
     * request resumes it with the host's clock although it was stopped for seconds — and gVisor,
     * the worker JVM and the transport come back with it, through a second pause too.
     */
    @Test
    void anIdleCloneIsPausedTakesNoCpuAndComesBackWithTheHostsClock() throws Exception {
        QemuVmBackend b = backend();
        SandboxConfig config = E2e.config().idlePause(Duration.ofSeconds(1)).build();
        E2e.buildTemplate(b, config);
        try (Sandbox s = b.start(config)) {
            io.qvm.internal.sandbox.QemuSandbox q = (io.qvm.internal.sandbox.QemuSandbox) s;
            assertEquals(41, s.render(svg(1)).width());
            for (int round = 1; round <= 2; round++) {
                await().atMost(Duration.ofSeconds(30)).until(q::paused);
                // past the check after the pause, which redoes a pause that left QEMU busy
                io.qvm.internal.sandbox.QemuSandbox.PauseCheck check = io.qvm.internal.sandbox.QemuSandbox.PauseCheck.DEFAULT;
                Thread.sleep(check.settle().plus(check.window()).plusSeconds(1).toMillis());
                long pid = q.pid();
                Duration before = ProcessHandle.of(pid).orElseThrow().info().totalCpuDuration().orElseThrow();
                Thread.sleep(4000); // the guest's clocks stand still meanwhile (and 1 s before)
                Duration after = ProcessHandle.of(pid).orElseThrow().info().totalCpuDuration().orElseThrow();
                E2e.log("paused clone " + s.id() + ": " + after.minus(before).toMillis() + " ms of CPU in 4 s (pauses redone so"
                        + " far: " + q.repauses() + ")");
                assertTrue(after.minus(before).compareTo(Duration.ofMillis(400)) < 0,
                        "a paused VM runs nothing: " + after.minus(before).toMillis() + " ms of CPU in 4 s; its threads"
                        + " (user+system ticks): " + threads(pid));
                // The init sets the guest kernel's clock on resume; gVisor's sentry takes it up at its
                // next calibration (about a second), as after a restore.
                long resumed = System.nanoTime();
                WorkerStatus st;
                long skew;
                do {
                    long t0 = System.currentTimeMillis();
                    st = s.status();
                    long t1 = System.currentTimeMillis();
                    skew = st.wallClockMillis() < t0 ? t0 - st.wallClockMillis() : Math.max(0, st.wallClockMillis() - t1);
                } while (skew > 1_000 && System.nanoTime() - resumed < Duration.ofSeconds(10).toNanos());
                E2e.log("resumed in " + q.lastResume().toMillis() + " ms; worker clock within " + skew + " ms after "
                        + (System.nanoTime() - resumed) / 1_000_000 + " ms; " + st);
                assertTrue(skew <= 1_000, "the clock was set on resume although the VM stood still for 4 s: " + skew
                        + " ms off 10 s later");
                assertEquals(41 + round, s.render(svg(round + 1)).width());
            }
            assertEquals(2, q.pauses());
        }
    }

    static String threads(long pid) throws java.io.IOException {
        StringBuilder sb = new StringBuilder();
        try (var ts = Files.list(Path.of("/proc/" + pid + "/task"))) {
            for (Path t : ts.toList()) {
                String[] f = Files.readString(t.resolve("stat")).replaceAll(".*\\) ", "").split(" ");
                sb.append(Files.readString(t.resolve("comm")).strip()).append('=').append(f[11]).append('+').append(f[12]).append(' ');
            }
        }
        return sb.toString();
    }

    @Test
    void aTamperedTemplateIsRefusedAndRebuiltNeverBooted() throws Exception {
        // an unwarmed template: this test rebuilds the one it tampers with in every run, and what
        // it proves does not depend on the warm-up (which would add 25-27 s here); the warmed
        // templates the other tests restore are left alone
        QemuVmBackend b = backend(false);
        SandboxConfig config = E2e.config().build();
        Template before = E2e.buildTemplate(b, config);
        // the RAM file of a shared-RAM template, the whole migration stream of a full-state one
        Path saved = before.ramFile().orElse(before.dir().resolve(Template.STATE));
        try (RandomAccessFile f = new RandomAccessFile(saved.toFile(), "rw")) { // r--------: the suite runs as root
            f.seek(f.length() / 2);
            f.write(0x5a); // one byte of guest RAM changed: the file's ctime moves
        }
        try (Sandbox s = b.start(config)) {
            assertTrue(progress.stream().anyMatch(l -> l.contains("was refused") && l.contains("rebuilding")),
                    "the refusal was said: " + progress);
            Template after = E2e.template(E2e.templateRoot(), b.admin().templateId(config));
            assertNotEquals(before.meta().created(), after.meta().created(), "a new template was built");
            assertEquals(after.id(), s.bootReport().template().orElseThrow(), "and the sandbox is its clone");
            assertEquals(41, s.render(svg(1)).width());
        }
    }

    @Test
    @Tag("security")
    void aRunningCloneHoldsNothingOfItsTemplateWritable() throws Exception {
        QemuVmBackend b = backend();
        SandboxConfig config = E2e.config().build();
        Template t = E2e.buildTemplate(b, config);
        for (String f : List.of(Template.STATE, Template.META)) {
            assertEquals("r--------", java.nio.file.attribute.PosixFilePermissions.toString(
                    Files.getPosixFilePermissions(t.dir().resolve(f))), f + " is read-only on disk");
        }
        try (Sandbox s = b.start(config)) {
            assertEquals(t.id(), s.bootReport().template().orElseThrow());
            long pid = Long.parseLong(Files.readString(s.stateDir().resolve("qemu.pid")).strip());
            Path root = E2e.templateRoot().toRealPath();
            List<String> into = new ArrayList<>();
            List<String> writable = new ArrayList<>();
            try (java.util.stream.Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
                for (Path fd : fds.toList()) {
                    Path target;
                    try {
                        target = Files.readSymbolicLink(fd);
                    } catch (java.io.IOException gone) {
                        continue;
                    }
                    if (!target.startsWith(root)) {
                        continue;
                    }
                    String flags = Files.readAllLines(Path.of("/proc", Long.toString(pid), "fdinfo",
                            fd.getFileName().toString())).stream().filter(l -> l.startsWith("flags:")).findFirst()
                            .orElseThrow().replaceAll("flags:\\s*", "");
                    String seen = "fd " + fd.getFileName() + " -> " + target + " flags 0" + flags;
                    into.add(seen);
                    if ((Integer.parseInt(flags, 8) & 3) != 0) { // O_ACCMODE: not O_RDONLY
                        writable.add(seen);
                    }
                }
            }
            E2e.log("clone " + s.id() + " of a " + t.meta().mode() + " template, QEMU pid " + pid
                    + ", descriptors into the template directory: " + into);
            assertEquals(List.of(), writable, "no descriptor of the clone's QEMU may write the template");
            if (t.ramFile().isPresent()) {
                assertTrue(into.stream().anyMatch(l -> l.contains(t.ramFile().get().getFileName().toString())),
                        "a shared-RAM clone maps the template's RAM file (read-only): " + into);
            }
            assertEquals(41, s.render(svg(1)).width());
        }
    }

    /**
     * Four (twenty before issue 19, ten before the suite outgrew its 40 minutes): enough for every
     * request to show a clone of its own and the pool to recycle each; on QEMU 7.2 each clone reads
     * the template's whole RAM (seconds under TCG). The reliability load runs the long series.
     */
    private static final int DOCUMENTS = 4;

    @Test
    void aPerRequestPoolRendersEachDocumentInACloneOfItsOwnAndLeavesNothingRunning() throws Exception {
        QemuVmBackend b = backend();
        SandboxConfig config = E2e.config().build();
        E2e.buildTemplate(b, config);
        List<String> ids = new ArrayList<>();
        try (SandboxPool pool = SandboxPool.builder(b, config).recycle(SandboxPool.Recycle.perRequest())
                .minIdle(1).maxSandboxes(2).build()) {
            for (int i = 0; i < DOCUMENTS; i++) {
                RenderRequest r = svg(i);
                int want = 40 + i;
                RenderResult result = pool.withSandbox(s -> {
                    synchronized (ids) {
                        ids.add(s.id());
                    }
                    assertTrue(s.bootReport().restored(), "every sandbox is a clone");
                    return s.render(r);
                });
                assertEquals(want, result.width());
            }
            SandboxPool.PoolStats stats = pool.stats();
            E2e.log("pool: " + stats);
            assertEquals(DOCUMENTS, stats.recycled(), "every sandbox was closed after its one request");
            assertEquals(0, stats.started(), "no cold boot");
        }
        Set<String> distinct = new HashSet<>(ids);
        assertEquals(DOCUMENTS, distinct.size(), DOCUMENTS + " documents, as many different clones: " + ids);
        await().atMost(Duration.ofMinutes(1)).until(() -> E2e.processesMentioning(state.toString()).isEmpty());
        try (var dirs = Files.list(state.resolve("sandboxes"))) {
            assertEquals(0, dirs.count(), "no sandbox state left");
        }
    }
}
