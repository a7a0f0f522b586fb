package io.qvm.testing;

import io.qvm.BootFailedException;
import io.qvm.BootReport;
import io.qvm.HostSetupException;
import io.qvm.PoolClosedException;
import io.qvm.PoolTimeoutException;
import io.qvm.RenderFailedException;
import io.qvm.Sandbox;
import io.qvm.SandboxBackend;
import io.qvm.SandboxConfig;
import io.qvm.SandboxException;
import io.qvm.SandboxLostException;
import io.qvm.SandboxPool;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.WorkerStatus;
import io.qvm.worker.DocumentRenderHandler;
import io.qvm.worker.Log;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * <strong>NOT A SANDBOX.</strong> A {@link SandboxBackend} for a server's own unit tests: it
 * renders every document <em>in the test's JVM</em> with qvm's worker renderer (Batik for SVG,
 * PDFBox for PDF, the worker's limits and typed refusals) — no QEMU, no VM, no gVisor, nothing
 * between the document and the process. Never give it a document you do not trust, and never
 * use it outside tests.
 *
 * <p>What it is for: a server's code around qvm — its {@code catch} clauses, its HTTP status
 * mapping, its retries — tested on every branch without QEMU. Each of qvm's typed errors can be
 * scripted, and a real {@link SandboxPool} runs on top of it unchanged:
 *
 * <pre>{@code
 * FakeSandboxBackend backend = new FakeSandboxBackend();
 * try (SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.defaults()).build()) {
 *     RenderResult png = pool.render(RenderRequest.svg(svgBytes));          // a real PNG
 *     backend.failNextRender(FakeSandboxBackend.renderFailed(ErrorCode.PARSE_ERROR));
 *     assertThrows(RenderFailedException.class, () -> pool.render(RenderRequest.svg(svgBytes)));
 *     backend.failNextStart(FakeSandboxBackend.bootFailed());              // the next sandbox never boots
 * }
 * }</pre>
 *
 * <p>What is faithful: the request and its answer go through the real frame codec and the
 * host's checks of the PNG (size, limits, what was asked); a request above
 * {@link SandboxConfig#maxRequestBytes()} is refused with {@code TOO_LARGE} before it is
 * "sent"; a document the worker refuses gets the worker's {@link RenderFailedException} code; a
 * scripted {@link SandboxLostException} ends its sandbox, as a real loss does; a sandbox is closed
 * by its {@link #close() backend}. What is not: time (a render takes what it takes here, no boot,
 * no restore), memory (no VM's limit: a document that exhausts the worker's heap exhausts your
 * test's, and where the heap does not recover the worker's renderer halts the JVM with status 3,
 * here your test's JVM, as it halts the worker's in a sandbox), and isolation. Test the loss of a
 * sandbox with {@link #outOfMemory()} and {@link #sandboxLost}, never with a real memory bomb.
 *
 * <p>Thread-safe. Scripted failures are used in the order they were given, by whichever start or
 * render comes next, on any sandbox.
 */
public final class FakeSandboxBackend implements SandboxBackend {

    /** The accelerator every fake sandbox's {@link BootReport} names. */
    public static final String ACCELERATOR = "none (in-process fake, not a sandbox)";

    private final Queue<SandboxException> startFailures = new ConcurrentLinkedQueue<>();
    private final Queue<SandboxException> renderFailures = new ConcurrentLinkedQueue<>();
    private final List<FakeSandbox> sandboxes = new CopyOnWriteArrayList<>();
    private final List<RenderRequest> renders = new CopyOnWriteArrayList<>();
    private final AtomicInteger starts = new AtomicInteger();
    private final AtomicLong ids = new AtomicLong();
    private final SecureRandom random = new SecureRandom();
    private final Path dir;
    private volatile boolean restored = true;
    private volatile boolean closed;
    /** While true, renders wait at their start ({@link #holdRenders()}). */
    private boolean held;
    private int waitingAtHold;
    private final Object hold = new Object();

    /** A backend whose sandboxes keep their (near empty) logs in a temporary directory, removed by {@link #close()}. */
    public FakeSandboxBackend() {
        try {
            this.dir = Files.createTempDirectory("qvm-fake-backend-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the fake backend's temporary directory", e);
        }
    }

    /**
     * Whether sandboxes say they were restored from a template ({@code true}, the default) or
     * cold-booted: a {@link SandboxPool} on a backend that cold-boots logs a warning once and
     * says so in {@link SandboxPool.PoolStats#coldBootNotice()}.
     */
    public FakeSandboxBackend restored(boolean restored) {
        this.restored = restored;
        return this;
    }

    /** The next {@link #start} throws {@code failure} (e.g. {@link #bootFailed()}, {@link #hostSetup}). */
    public FakeSandboxBackend failNextStart(SandboxException failure) {
        startFailures.add(Objects.requireNonNull(failure, "failure"));
        return this;
    }

    /**
     * The next render (on whichever sandbox gets it) throws {@code failure} instead of rendering.
     * A {@link SandboxLostException} also ends that sandbox, as a real loss does; so a pool, which
     * retries a {@link SandboxLostException.Reason#CRASHED crash} once in a fresh sandbox, renders
     * the document on its second try unless a second failure is queued.
     */
    public FakeSandboxBackend failNextRender(SandboxException failure) {
        renderFailures.add(Objects.requireNonNull(failure, "failure"));
        return this;
    }

    /**
     * Makes every render from now on wait at its start, in its sandbox, until
     * {@link #releaseRenders()}: a test sees requests in flight (a queue filling, a drain waiting
     * for them) without timing anything. A waiting render that is interrupted fails as a lost
     * sandbox would, with the interrupt kept.
     */
    public FakeSandboxBackend holdRenders() {
        synchronized (hold) {
            held = true;
        }
        return this;
    }

    /** Lets every held render, and every later one, go on. */
    public FakeSandboxBackend releaseRenders() {
        synchronized (hold) {
            held = false;
            hold.notifyAll();
        }
        return this;
    }

    /** Renders waiting now at {@link #holdRenders()}'s hold. */
    public int heldRenders() {
        synchronized (hold) {
            return waitingAtHold;
        }
    }

    private void awaitHold() {
        synchronized (hold) {
            waitingAtHold++;
            try {
                while (held) {
                    hold.wait();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SandboxLostException(SandboxLostException.Reason.CRASHED,
                        "FakeSandboxBackend: interrupted while the render was held");
            } finally {
                waitingAtHold--;
            }
        }
    }

    // ---- the typed errors, as qvm throws them -----------------------------------------------------

    /** The worker refused or failed the document with {@code code}; the sandbox stays usable. */
    public static RenderFailedException renderFailed(ErrorCode code) {
        return new RenderFailedException(code, "scripted by FakeSandboxBackend");
    }

    /** The sandbox was lost mid-request (crash, deadline or protocol violation) and is stopped. */
    public static SandboxLostException sandboxLost(SandboxLostException.Reason reason) {
        return new SandboxLostException(reason, "scripted by FakeSandboxBackend: the sandbox was lost ("
                + reason + ")");
    }

    /** The worker ran out of memory on the document (exit status 3): a pool does not retry it. */
    public static SandboxLostException outOfMemory() {
        return new SandboxLostException(SandboxLostException.Reason.CRASHED, "scripted by FakeSandboxBackend: "
                + "the worker ran out of memory", null, "", "", SandboxLostException.OUT_OF_MEMORY_STATUS);
    }

    /** No sandbox reached READY. */
    public static BootFailedException bootFailed() {
        return new BootFailedException("scripted by FakeSandboxBackend: the guest did not become ready");
    }

    /** This host cannot run sandboxes as configured. */
    public static HostSetupException hostSetup(HostSetupException.Problem problem) {
        return new HostSetupException(problem, "scripted by FakeSandboxBackend: " + problem);
    }

    /**
     * What a {@link SandboxPool} throws when no sandbox came free in time. A pool throws it
     * itself (all {@code maxSandboxes} busy for {@code acquireTimeout}); scripting it on a render
     * lets a test reach that branch without making sandboxes busy.
     */
    public static PoolTimeoutException poolTimeout() {
        return new PoolTimeoutException(Duration.ofSeconds(30), 1);
    }

    /** What a closed {@link SandboxPool} throws; the pool throws it itself after {@code close()}. */
    public static PoolClosedException poolClosed() {
        return new PoolClosedException();
    }

    // ---- what happened ----------------------------------------------------------------------------

    /** How many sandboxes were asked for (failed starts included). */
    public int starts() {
        return starts.get();
    }

    /** Every render request a sandbox received, in order (scripted failures included). */
    public List<RenderRequest> renders() {
        return List.copyOf(renders);
    }

    /** Every sandbox started so far, closed ones included. */
    public List<Sandbox> sandboxes() {
        return List.copyOf(sandboxes);
    }

    /** Sandboxes started and not yet closed. */
    public long liveSandboxes() {
        return sandboxes.stream().filter(Sandbox::isAlive).count();
    }

    // ---- SandboxBackend ---------------------------------------------------------------------------

    @Override
    public Sandbox start(SandboxConfig config) {
        Objects.requireNonNull(config, "config");
        if (closed) {
            throw new IllegalStateException("the FakeSandboxBackend is closed");
        }
        starts.incrementAndGet();
        SandboxException failure = startFailures.poll();
        if (failure != null) {
            throw failure;
        }
        FakeSandbox s = new FakeSandbox(config, "fake-" + ids.incrementAndGet());
        sandboxes.add(s);
        return s;
    }

    /** Closes every sandbox and removes the temporary directory. Idempotent. */
    @Override
    public void close() {
        closed = true;
        sandboxes.forEach(Sandbox::close);
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // already gone
        }
    }

    private static PrintStream silent() {
        return new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8);
    }

    /** One "sandbox": the worker's renderer, called in this JVM under the config's limits. */
    private final class FakeSandbox implements Sandbox {
        private final SandboxConfig config;
        private final String id;
        private final Limits limits;
        private final Path stateDir;
        private final BootReport bootReport;
        private final CompletableFuture<Void> exit = new CompletableFuture<>();
        private final AtomicLong served = new AtomicLong();
        /** A renderer of its own, as each VM has its worker. */
        private final DocumentRenderHandler renderer = new DocumentRenderHandler(new Log(silent()));
        private long nextRequestId = 1;

        FakeSandbox(SandboxConfig config, String id) {
            this.config = config;
            this.id = id;
            // as the host sends them in HELLO
            this.limits = new Limits((int) config.maxRequestBytes(), (int) config.maxResponseBytes(),
                    config.maxPixels(), config.maxSide(), config.maxPages(), config.requestTimeout().toMillis());
            this.stateDir = dir.resolve(id);
            try {
                Files.createDirectories(stateDir);
                Files.writeString(stateDir.resolve("console.log"),
                        "FakeSandboxBackend: no VM; documents render in the test's JVM\n");
                Files.writeString(stateDir.resolve("qemu-stderr.log"), "");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            Map<String, Duration> phases = new LinkedHashMap<>();
            phases.put("worker-ready", Duration.ZERO);
            this.bootReport = new BootReport(ACCELERATOR, "none", "in-process", phases,
                    List.of("FakeSandboxBackend: not a sandbox"),
                    restored ? Optional.of("fake-template") : Optional.empty());
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public SandboxConfig config() {
            return config;
        }

        @Override
        public BootReport bootReport() {
            return bootReport;
        }

        @Override
        public synchronized byte[] echo(byte[] payload) {
            alive();
            refuseAbove(payload.length, "echo");
            return payload.clone();
        }

        @Override
        public synchronized RenderResult render(RenderRequest request) {
            Objects.requireNonNull(request, "request");
            alive();
            awaitHold();
            alive();
            renders.add(request);
            SandboxException failure = renderFailures.poll();
            if (failure != null) {
                if (failure instanceof SandboxLostException) {
                    close();
                }
                throw failure;
            }
            refuseAbove(request.document().length, "render");
            long requestId = nextRequestId++;
            Frame reply = renderer.handle(Messages.toFrame(request, requestId), limits);
            served.incrementAndGet();
            if (reply.kind() == FrameKind.ERROR) {
                ErrorReply e = Messages.errorReply(reply);
                throw new RenderFailedException(e.code(), e.message());
            }
            try {
                return Messages.renderResult(reply, request, limits);
            } catch (IllegalArgumentException e) { // what the real host calls a lying worker
                close();
                throw new SandboxLostException(SandboxLostException.Reason.PROTOCOL_VIOLATION,
                        "the renderer's answer broke the protocol: " + e.getMessage(), e);
            }
        }

        @Override
        public synchronized WorkerStatus status() {
            alive();
            byte[] bytes = new byte[WorkerStatus.RANDOM_BYTES];
            random.nextBytes(bytes);
            return WorkerStatus.of(System.currentTimeMillis(), bytes, served.get(), 1);
        }

        @Override
        public boolean isAlive() {
            return !exit.isDone();
        }

        @Override
        public CompletableFuture<Void> onExit() {
            return exit;
        }

        @Override
        public Path consoleLog() {
            return stateDir.resolve("console.log");
        }

        @Override
        public Path stderrLog() {
            return stateDir.resolve("qemu-stderr.log");
        }

        @Override
        public Path stateDir() {
            return stateDir;
        }

        @Override
        public void close() {
            exit.complete(null);
        }

        private void alive() {
            if (!isAlive()) {
                throw new SandboxLostException(SandboxLostException.Reason.CRASHED, "the fake sandbox " + id
                        + " is closed");
            }
        }

        private void refuseAbove(int bytes, String what) {
            if (bytes > config.maxRequestBytes()) {
                throw new RenderFailedException(ErrorCode.TOO_LARGE, "the " + what + " request of " + bytes
                        + " bytes is above maxRequestBytes " + config.maxRequestBytes());
            }
        }

        @Override
        public String toString() {
            return "FakeSandbox[" + id + (isAlive() ? "" : ", closed") + "]";
        }
    }
}
