package io.qvm.internal.sandbox;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Messages;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.BootReport;
import io.qvm.RenderFailedException;
import io.qvm.SandboxLostException;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.SandboxException;
import io.qvm.internal.process.QemuProcess;
import io.qvm.internal.process.SandboxState;
import io.qvm.internal.process.SocketPaths;
import io.qvm.internal.process.StopLadder;
import io.qvm.internal.process.StopReport;
import io.qvm.internal.qmp.QmpClient;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import io.qvm.transport.WorkerErrorException;
import io.qvm.protocol.WorkerStatus;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * The {@link Sandbox} of {@code QemuVmBackend}: owns one QEMU process, its QMP connection, the
 * worker transport, the console watcher and the sandbox's state and socket directories, and
 * releases all of them on {@link #close()}.
 *
 * <p>Stopping climbs a ladder: GOODBYE to the worker (it exits, the guest init powers off and
 * QEMU exits by itself), then QMP {@code quit}, then SIGTERM, then SIGKILL — each rung with its
 * deadline. After a request timeout the GOODBYE rung is skipped: the worker is busy.
 *
 * <p>The worker is trusted with nothing: a render result is checked against its own header, the
 * request and the {@link Limits} the sandbox was opened with before it is returned
 * ({@link Messages#renderResult(Frame, RenderRequest, Limits)}), and an answer that breaks the
 * protocol stops the sandbox with {@link SandboxLostException.Reason#PROTOCOL_VIOLATION}. So does
 * anything else the worker sends after READY: the transport reports it as an event, the moment it
 * is decoded (its {@link SandboxTransport#closed()} fails with reason
 * {@link TransportException.Reason#PROTOCOL_VIOLATION}, or {@code FRAME_STALLED}), and the sandbox
 * stops its VM then, with or without a request in flight; the next request says why.
 *
 * <p>A sandbox left without a request for {@link SandboxConfig#idlePause()} is paused (QMP
 * {@code stop}): an idle guest is not idle under TCG — its kernel's timers, the runsc sentry and
 * the worker JVM's housekeeping took a third of a host core per VM — while a paused one takes
 * none. The next request resumes it ({@code cont}) and first has the guest init step the wall
 * clock by as long as the VM stood still, then measure and step away what is left
 * ({@link GuestControl#syncClock}; its randomness is its own already, nothing was copied). Closing a paused sandbox skips the GOODBYE rung:
 * nothing in the guest would read it.
 */
public final class QemuSandbox implements Sandbox {

    private static final System.Logger LOG = System.getLogger(QemuSandbox.class.getName());

    private final String id;
    private final SandboxConfig config;
    private final Limits limits;
    private final BootReport bootReport;
    private final QemuProcess qemu;
    private final QmpClient qmp;
    private final SandboxTransport transport;
    private final SandboxState state;
    private final SocketPaths sockets;
    private final GuestWatcher console;
    private final List<AutoCloseable> extras;
    private final Consumer<QemuSandbox> onClosed;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final CompletableFuture<Void> exit = new CompletableFuture<>();
    private final java.util.concurrent.locks.ReentrantLock requestLock = new java.util.concurrent.locks.ReentrantLock();
    private final GuestControl control;
    private final Duration idlePause;
    private final PauseCheck pauseCheck;
    /** Guards {@link #paused} against {@link #stop}: a sandbox is paused only while not closed. */
    private final Object pauseLock = new Object();
    private boolean paused;
    /**
     * When the last idle pause's {@code stop} returned ({@link System#nanoTime}), and whether it
     * did (a stop that failed leaves {@link #paused} set, and this unconfirmed), under {@link #pauseLock}.
     */
    private long pausedAtNanos;
    private boolean stopConfirmed;
    /**
     * Bumped each time the pause is armed again (under {@link #requestLock}, at the end of every
     * request): a pause task already running when it was re-armed finds it moved and does nothing.
     */
    private volatile long idleGeneration;
    private volatile java.util.concurrent.ScheduledFuture<?> pendingPause;
    private final java.util.concurrent.atomic.AtomicLong pauses = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong repauses = new java.util.concurrent.atomic.AtomicLong();
    private final AtomicBoolean pauseLeakSaid = new AtomicBoolean();
    private volatile Duration lastResume = Duration.ZERO;
    private volatile GuestControl.Synced lastClock;
    /**
     * The console's size when the current request began: a request's failure carries only what
     * the guest printed since, so no earlier document's output reaches this caller.
     */
    private volatile long requestConsoleMark;
    private volatile StopReport stopReport;
    /** Why the worker lost this sandbox by breaking the protocol, once it did (guarded by itself for writes). */
    private final Object lossLock = new Object();
    private volatile SandboxLostException lost;

    /**
     * Everything a started sandbox owns; the backend builds it once the handshake succeeded.
     * {@code limits} are the ones its HELLO carried: the worker's answers are held to them.
     * {@code idlePause}: {@link SandboxConfig#idlePause()}, or zero for a VM that must never be
     * paused by the sandbox (a template VM about to be saved).
     */
    public record Parts(String id, SandboxConfig config, Limits limits, BootReport bootReport, QemuProcess qemu,
            QmpClient qmp, SandboxTransport transport, SandboxState state, SocketPaths sockets, GuestWatcher console,
            GuestControl control, Duration idlePause, PauseCheck pauseCheck, List<AutoCloseable> extras) {
        public Parts {
            Objects.requireNonNull(pauseCheck, "pauseCheck");
        }
    }

    public QemuSandbox(Parts p, Consumer<QemuSandbox> onClosed) {
        this.id = p.id();
        this.config = p.config();
        this.limits = p.limits();
        this.bootReport = p.bootReport();
        this.qemu = p.qemu();
        this.qmp = p.qmp();
        this.transport = p.transport();
        this.state = p.state();
        this.sockets = p.sockets();
        this.console = p.console();
        this.extras = List.copyOf(p.extras());
        this.control = p.control();
        this.idlePause = p.idlePause();
        this.pauseCheck = p.pauseCheck();
        this.onClosed = onClosed;
        // Last, once every field is set: it may run at once (a violation right after READY).
        transport.closed().whenComplete((v, err) -> {
            if (brokeTheProtocol(err)) {
                Thread t = new Thread(() -> lose(err.getMessage(), err),
                        "qvm-" + id + "-violation");
                t.setDaemon(true);
                t.start(); // stopping waits for QEMU: not on the transport's I/O thread
            }
        });
        requestLock.lock();
        try {
            scheduleIdlePause();
        } finally {
            requestLock.unlock();
        }
    }

    /** One thread for every sandbox's pause: a pause is one QMP command. */
    private static final java.util.concurrent.ScheduledThreadPoolExecutor PAUSER = pauser();

    private static java.util.concurrent.ScheduledThreadPoolExecutor pauser() {
        java.util.concurrent.ScheduledThreadPoolExecutor e = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "qvm-idle-pause");
            t.setDaemon(true);
            return t;
        });
        e.setRemoveOnCancelPolicy(true); // a sandbox that is closed or busy again leaves nothing queued
        return e;
    }

    /** Under {@link #requestLock}: (re)arms the idle pause, voiding any earlier one. */
    private void scheduleIdlePause() {
        long generation = idleGeneration + 1; // written under requestLock only
        idleGeneration = generation;
        if (pendingPause != null) {
            pendingPause.cancel(false);
            pendingPause = null;
        }
        if (idlePause.isZero() || closed.get()) {
            return;
        }
        pendingPause = PAUSER.schedule(() -> pauseIfIdle(generation), idlePause.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * Pauses the VM if no request came since the pause {@code generation} was armed. Never waits
     * for a request: one in flight (or one that came meanwhile) re-arms the pause when it ends.
     */
    private void pauseIfIdle(long generation) {
        if (!requestLock.tryLock()) {
            return;
        }
        try {
            if (generation != idleGeneration) {
                return;
            }
            synchronized (pauseLock) {
                if (closed.get() || paused || !qemu.isAlive()) {
                    return;
                }
                // paused first: a stop that timed out may still have stopped the VM, and the next
                // request's cont is harmless on a running one
                paused = true;
                stopConfirmed = false;
                qmp.stop();
                pausedAtNanos = System.nanoTime();
                stopConfirmed = true;
                pauses.incrementAndGet(); // under the lock: whoever sees paused() sees this pause counted
            }
            LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + " paused after " + idlePause.toMillis()
                    + " ms without a request");
            checkPauseLater(generation, 0);
        } catch (io.qvm.internal.qmp.QmpException e) {
            // QEMU going away (it is then lost to the next request) or too busy to answer: stays running
            LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + " could not be paused: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            requestLock.unlock();
        }
    }

    /**
     * What the check after each idle pause allows: {@link #settle} after the {@code stop}, the
     * paused QEMU may use at most {@link #maxCpu} of CPU time within {@link #window}; one that
     * uses more is resumed and stopped again, at most {@link #retries} times a pause (then it is
     * left so, with one WARNING in the sandbox's life). {@link #maxCpu} is a rate: a window the one
     * pauser thread ran late allows proportionally more.
     *
     * <p>Why: a paused QEMU should take no CPU at all, and most do (no clock tick in 40 s). But
     * about one pause in ten (QEMU 10.0.2, TCG, this project's 2-core host, 12 clones paused at
     * once) left QEMU's main loop awake: its virtual clock was still enabled while the VM was
     * paused (read with gdb from {@code main_loop_tlg}: {@code enabled=1} on the busy ones, {@code 0}
     * on the others), so a virtual-clock timer that can never fire, the clock standing still, set
     * the poll timeout again and again (0.14 to 3 ms, each QEMU its own) and the process took 0.6 to
     * 31 % of a core for as long as it stayed paused. A {@code cont} and a {@code stop} redo the
     * pause. Measured with the check at 2 % of a core (40 ms in 2 s): in 5 runs of 12 clones, 5
     * were paused again, once each, and took 0.0 % after; 5 others stayed at 0.8 to 1.8 %, under
     * that bar, so the bar is 0.5 % (20 ms in 4 s; a paused QEMU that keeps still uses none). At
     * 0.5 %, in 4 more runs of 12, 2 were paused again and all 48 took 0.0 % in every 5 s window
     * from 8 to 48 s after their start. The main loop is the same code under a hardware
     * accelerator: untested on a real host.
     */
    public record PauseCheck(Duration settle, Duration window, Duration maxCpu, int retries) {
        /** 0.5 s to settle, then at most 20 ms of CPU (0.5 % of a core) in 4 s; three retries. */
        public static final PauseCheck DEFAULT = new PauseCheck(Duration.ofMillis(500), Duration.ofSeconds(4),
                Duration.ofMillis(20), 3);
        /** No check: the pause is trusted. */
        public static final PauseCheck OFF = new PauseCheck(Duration.ZERO, Duration.ZERO, Duration.ZERO, 0);

        public PauseCheck {
            Objects.requireNonNull(settle, "settle");
            Objects.requireNonNull(window, "window");
            Objects.requireNonNull(maxCpu, "maxCpu");
            if (settle.isNegative() || window.isNegative() || maxCpu.isNegative() || retries < 0) {
                throw new IllegalArgumentException("a pause check's durations and retries must not be negative");
            }
        }

        boolean off() {
            return window.isZero();
        }
    }

    /** QEMU's CPU time so far (every thread), where this host tells it. */
    private Optional<Duration> qemuCpu() {
        try {
            return qemu.handle().info().totalCpuDuration();
        } catch (RuntimeException e) {
            return Optional.empty();
        }
    }

    /** After the pause of {@code generation} (its {@code attempt}-th re-pause): measures the paused QEMU's CPU once it settled. */
    private void checkPauseLater(long generation, int attempt) {
        PauseCheck check = pauseCheck;
        if (check.off() || !qemu.isAlive()) {
            return;
        }
        PAUSER.schedule(() -> {
            Optional<Duration> from = stillPaused(generation) ? qemuCpu() : Optional.empty();
            long fromNanos = System.nanoTime();
            from.ifPresent(f -> PAUSER.schedule(() -> judgePause(generation, attempt, f, fromNanos, check),
                    check.window().toNanos(), TimeUnit.NANOSECONDS));
        }, check.settle().toNanos(), TimeUnit.NANOSECONDS);
    }

    private boolean stillPaused(long generation) {
        synchronized (pauseLock) {
            return paused && stopConfirmed && !closed.get() && generation == idleGeneration;
        }
    }

    /** Whether the paused QEMU kept still over the window; if not, pauses it again (or says so, past the retries). */
    private void judgePause(long generation, int attempt, Duration from, long fromNanos, PauseCheck check) {
        Optional<Duration> to = stillPaused(generation) ? qemuCpu() : Optional.empty();
        if (to.isEmpty()) {
            return;
        }
        Duration used = to.get().minus(from);
        // the window as it was (the one pauser thread may have run it late): the bar is a rate
        long windowNanos = Math.max(check.window().toNanos(), System.nanoTime() - fromNanos);
        double allowed = check.maxCpu().toNanos() * ((double) windowNanos / check.window().toNanos());
        if (used.toNanos() <= allowed) {
            if (attempt > 0) {
                LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + ": paused again, its QEMU keeps still now");
            }
            return;
        }
        String busy = "its QEMU used " + used.toMillis() + " ms of CPU in " + windowNanos / 1_000_000
                + " ms while paused";
        if (attempt >= check.retries()) {
            if (pauseLeakSaid.compareAndSet(false, true)) { // once in the sandbox's life
                LOG.log(System.Logger.Level.WARNING, "sandbox " + id + ": " + busy + ", after " + attempt
                        + " pauses redone; it stays paused so. Its next request resumes it as usual, and closing it"
                        + " ends it (a QEMU whose main loop stayed awake through stop: PauseCheck's javadoc)");
            }
            return;
        }
        if (!requestLock.tryLock()) {
            return; // a request is taking it: it resumes the VM, and the next pause is checked afresh
        }
        try {
            synchronized (pauseLock) {
                if (!stillPaused(generation) || !qemu.isAlive()) {
                    return;
                }
                long before = System.nanoTime();
                // until the stop below returns: a failure leaves it paused but unconfirmed, as a failed
                // idle pause does (the next request's cont is harmless on a running VM, and its first
                // clock step only measures)
                stopConfirmed = false;
                qmp.cont();
                qmp.stop();
                // the guest ran between the two: what it stood still for is the pause before and the one from now
                pausedAtNanos += System.nanoTime() - before;
                stopConfirmed = true;
                repauses.incrementAndGet();
            }
            LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + ": " + busy + "; paused again");
        } catch (io.qvm.internal.qmp.QmpException e) {
            LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + " could not be paused again: " + e.getMessage());
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } finally {
            requestLock.unlock();
        }
        checkPauseLater(generation, attempt + 1);
    }

    /**
     * Under {@link #requestLock}, before a request is sent: resumes a paused VM and has the init
     * set the guest's wall clock. A VM that cannot be resumed is stopped and lost.
     */
    private void resumeIfPaused(String what, long deadlineNanos) {
        long pausedAt;
        boolean confirmed;
        synchronized (pauseLock) {
            if (!paused) {
                return;
            }
            paused = false;
            pausedAt = pausedAtNanos;
            confirmed = stopConfirmed;
        }
        long t0 = System.nanoTime();
        try {
            qmp.cont();
            // the guest's clocks stood still from the stop to the cont; after a stop that failed
            // (the VM may have run all along) nothing is assumed: the first step only measures
            long stoodStill = confirmed ? Math.max(0, System.nanoTime() - pausedAt) / 1000 : 0;
            try {
                // the request's deadline bounds its resume
                GuestControl.Synced synced = control.syncClock(stoodStill,
                        Duration.ofNanos(Math.max(1, deadlineNanos - System.nanoTime())));
                if (synced.off(GuestControl.MAX_CLOCK_SKEW)) {
                    throw new IOException("the guest's clock is still " + synced + " from the host's after the resume");
                }
                lastClock = synced;
            } catch (GuestControl.Refused r) {
                if (!r.unknownCommand()) {
                    throw r;
                }
                setClockOldInit(deadlineNanos);
            }
            lastResume = Duration.ofNanos(System.nanoTime() - t0);
        } catch (io.qvm.internal.qmp.QmpException | IOException | RuntimeException e) {
            String consoleTail = qemu.consoleTail(requestConsoleMark, QemuProcess.TAIL_BYTES);
            String stderrTail = qemu.stderrTail(QemuProcess.TAIL_BYTES);
            stop(false);
            throw new SandboxLostException(SandboxLostException.Reason.CRASHED, "sandbox " + id + " was paused after "
                    + idlePause.toMillis() + " ms without a request and could not be resumed for the " + what
                    + " request (" + e.getMessage() + "); it was stopped and nothing was sent. Start a fresh sandbox"
                    + " (SandboxConfig.idlePause(Duration.ZERO) keeps sandboxes running while idle)", e, consoleTail,
                    stderrTail, console.workerExitStatus().orElse(null));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stop(false);
            throw new SandboxException("interrupted while resuming sandbox " + id + "; it was stopped", e);
        }
    }

    /** An image whose init predates {@code step}: whole seconds from {@code setclock}, or nothing before that. */
    private void setClockOldInit(long deadlineNanos) throws IOException, InterruptedException {
        try {
            control.setClock(java.time.Instant.now(), Duration.ofNanos(Math.max(1, deadlineNanos - System.nanoTime())));
        } catch (GuestControl.Refused r) {
            if (!r.unknownCommand()) {
                throw r;
            }
            // an image whose init predates setclock: the VM runs again, its clock is the pause's
            if (OLD_INIT_SAID.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.WARNING, "the guest image's init does not know 'setclock' (an image"
                        + " built before qvm could pause idle sandboxes): a resumed sandbox keeps the clock of its"
                        + " pause. Rebuild the image (qvm image build) to have it set");
            }
        }
    }

    private static final AtomicBoolean OLD_INIT_SAID = new AtomicBoolean();

    /** Whether the VM is paused now (it was idle for {@link SandboxConfig#idlePause()}). */
    public boolean paused() {
        synchronized (pauseLock) {
            return paused;
        }
    }

    /** How many times this sandbox was paused for being idle. */
    public long pauses() {
        return pauses.get();
    }

    /** How many times an idle pause was redone because the paused QEMU kept using CPU ({@link PauseCheck}). */
    public long repauses() {
        return repauses.get();
    }

    /** How long the last resume took: {@code cont} and the clock set (zero before the first). */
    public Duration lastResume() {
        return lastResume;
    }

    /** How close the last resume brought the guest's clock to the host's (empty before one, or from an old init). */
    public Optional<GuestControl.Synced> lastClock() {
        return Optional.ofNullable(lastClock);
    }

    /** Whether the transport was dropped for something the worker sent (not a plain connection loss). */
    private static boolean brokeTheProtocol(Throwable err) {
        return err instanceof TransportException t && (t.reason() == TransportException.Reason.PROTOCOL_VIOLATION
                || t.reason() == TransportException.Reason.FRAME_STALLED);
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

    /** The QEMU process id. */
    public long pid() {
        return qemu.pid();
    }

    @Override
    public byte[] echo(byte[] payload) {
        return call(Frame.of(FrameKind.ECHO, 0, payload), "echo").body();
    }

    @Override
    public WorkerStatus status() {
        Frame reply = call(Frame.of(FrameKind.STATUS, 0, (ObjectNode) null), "status");
        try {
            return Messages.workerStatus(reply);
        } catch (IllegalArgumentException e) {
            throw violation("status", e.getMessage(), e);
        }
    }

    /**
     * One STATUS request on a transport that completed its handshake (used while a clone proves
     * itself, before it is a sandbox).
     */
    public static WorkerStatus status(SandboxTransport transport, Duration timeout)
            throws InterruptedException, ExecutionException, TimeoutException {
        Frame reply = transport.request(Frame.of(FrameKind.STATUS, 0, (ObjectNode) null))
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        try {
            return Messages.workerStatus(reply);
        } catch (IllegalArgumentException e) {
            throw new SandboxException("the worker's status is malformed: " + e.getMessage());
        }
    }

    @Override
    public RenderResult render(RenderRequest request) {
        Frame reply = call(Messages.toFrame(request, 0), "render");
        try {
            return Messages.renderResult(reply, request, limits);
        } catch (IllegalArgumentException e) {
            throw violation("render", e.getMessage(), e);
        }
    }

    /**
     * Sends one request and waits for its answer within the request deadline, mapping every way it
     * can end to a typed exception. Package-visible so the CLI's relay can forward raw frames.
     */
    public Frame call(Frame request, String what) {
        ensureOpen();
        requestLock.lock();
        try {
            ensureOpen();
            if (request.body().length > limits.maxRequestBytes()) {
                throw new RenderFailedException(ErrorCode.TOO_LARGE, "the " + what + " request of " + request.body().length
                        + " bytes is above the limit of " + limits.maxRequestBytes() + " bytes; nothing was sent"
                        + " (limits come from SandboxConfig.maxRequestBytes)");
            }
            console.poll();
            if (console.overflow().isPresent()) {
                throw overflowed(what, null); // stopped while idle: nothing is sent to what is left of it
            }
            requestConsoleMark = qemu.consoleBytes(); // this request's evidence starts here (its resume's too)
            long deadlineNanos = System.nanoTime() + config.requestTimeout().toNanos();
            resumeIfPaused(what, deadlineNanos);
            CompletableFuture<Frame> reply = transport.request(request);
            Throwable refused = reply.isCompletedExceptionally() ? reply.handle((f, err) -> err).getNow(null) : null;
            if (refused instanceof FrameTooLargeException big) {
                // Refused by this side's own check before anything was written (a header above the
                // frame limit): the caller's request, not the worker's doing.
                throw new RenderFailedException(ErrorCode.TOO_LARGE, "the " + what + " request could not be sent: "
                        + big.getMessage() + "; nothing was sent");
            }
            if (brokeTheProtocol(refused)) { // while idle, and the event's own stop has not come this far yet
                throw lose("the worker broke the protocol before the " + what + " request, which was not sent ("
                        + refused.getMessage() + ")", refused);
            }
            Duration deadline = config.requestTimeout(); // for the message: the resume, if any, came out of it
            try {
                return reply.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                reply.cancel(false);
                String consoleTail = qemu.consoleTail(requestConsoleMark, QemuProcess.TAIL_BYTES);
                String stderrTail = qemu.stderrTail(QemuProcess.TAIL_BYTES);
                stop(false);
                throw new SandboxLostException(SandboxLostException.Reason.DEADLINE_EXCEEDED, "TIMEOUT: the " + what + " request overran the request deadline of "
                        + deadline.toMillis() + " ms; sandbox " + id + " was stopped. Start a fresh sandbox for the "
                        + "next request (or raise SandboxConfig.requestTimeout).", null, consoleTail, stderrTail,
                        console.workerExitStatus().orElse(null));
            } catch (ExecutionException e) {
                throw mapFailure(e.getCause(), what);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SandboxException("interrupted while waiting for the " + what + " reply of sandbox " + id, e);
            }
        } finally {
            scheduleIdlePause();
            requestLock.unlock();
        }
    }

    private SandboxException mapFailure(Throwable cause, String what) {
        if (cause instanceof WorkerErrorException w) {
            return new RenderFailedException(w.code(), w.reply().message());
        }
        if (brokeTheProtocol(cause)) { // the transport's event: the listener may be stopping the sandbox already
            return violation(what, cause.getMessage(), cause);
        }
        // The connection is gone: QEMU died, or the worker ended (the guest then powers off).
        qemu.onExit().completeOnTimeout(null, 5, TimeUnit.SECONDS).join();
        console.poll();
        String how = qemu.exitInfo().map(x -> "QEMU " + x.describe()).orElse("QEMU still running");
        String worker = console.workerExitStatus().map(s -> "; the worker exited with status " + s
                + (s == 3 ? " (out of memory: raise SandboxConfig.memoryMib or lower the document's size)" : ""))
                .orElse("");
        if (console.overflow().isPresent()) {
            return overflowed(what, cause);
        }
        worker += JvmCrashReport.clause(state.consoleLog());
        String consoleTail = qemu.consoleTail(requestConsoleMark, QemuProcess.TAIL_BYTES);
        String stderrTail = qemu.stderrTail(QemuProcess.TAIL_BYTES);
        stop(false);
        return new SandboxLostException(SandboxLostException.Reason.CRASHED, "sandbox " + id + " died during the " + what + " request (" + how + worker
                + "): " + cause.getMessage(), cause, consoleTail, stderrTail, console.workerExitStatus().orElse(null));
    }

    /**
     * The worker's answer to a request broke the protocol: stops the sandbox without a GOODBYE
     * (its worker is not to be trusted with one) and returns the failure that says so.
     */
    private SandboxLostException violation(String what, String problem, Throwable cause) {
        return lose("the worker's answer to the " + what + " request breaks the protocol (" + problem + ")", cause);
    }

    /**
     * The one way a sandbox is lost to a protocol violation, from a request's thread or from the
     * transport's event: the first caller keeps the evidence (the console and stderr tails, read
     * before the VM is stopped) and stops the VM; every caller gets that first failure.
     */
    private SandboxLostException lose(String problem, Throwable cause) {
        synchronized (lossLock) {
            if (lost == null) {
                String consoleTail = qemu.consoleTail(requestConsoleMark, QemuProcess.TAIL_BYTES);
                String stderrTail = qemu.stderrTail(QemuProcess.TAIL_BYTES);
                lost = new SandboxLostException(SandboxLostException.Reason.PROTOCOL_VIOLATION, "sandbox " + id + ": "
                        + problem + "; the sandbox was stopped and nothing of the answer is passed on. Its worker is"
                        + " not to be trusted: the document may have compromised it", cause, consoleTail, stderrTail,
                        console.workerExitStatus().orElse(null));
            }
        }
        stop(false);
        return lost;
    }

    /**
     * The guest wrote past the cap of its console or its events file, and the watcher killed QEMU
     * (whether a request was in flight or not): stops what is left of the sandbox and says so, as
     * a {@link SandboxLostException.Reason#PROTOCOL_VIOLATION} — only a guest whose init or kernel
     * is no longer the image's writes that much, so the document is not to be retried.
     */
    private SandboxLostException overflowed(String what, Throwable cause) {
        qemu.onExit().completeOnTimeout(null, 5, TimeUnit.SECONDS).join();
        String consoleTail = qemu.consoleTail(requestConsoleMark, QemuProcess.TAIL_BYTES);
        String stderrTail = qemu.stderrTail(QemuProcess.TAIL_BYTES);
        stop(false);
        return new SandboxLostException(SandboxLostException.Reason.PROTOCOL_VIOLATION, "sandbox " + id + " was lost"
                + " before the " + what + " request could be answered: " + console.overflow().orElseThrow() + ", so"
                + " the host stopped the VM. A guest that writes this much does not follow the contract (its init or"
                + " kernel was most likely taken over, by this document or an earlier one in the same sandbox): do"
                + " not retry the document; start a fresh sandbox for the next one", cause, consoleTail, stderrTail,
                console.workerExitStatus().orElse(null));
    }

    private void ensureOpen() {
        SandboxLostException why = lost;
        if (why != null) {
            throw new SandboxLostException(SandboxLostException.Reason.PROTOCOL_VIOLATION, "sandbox " + id
                    + " is closed: " + why.getMessage() + "; start a new one", why);
        }
        if (closed.get() && console.overflow().isPresent()) {
            throw new SandboxLostException(SandboxLostException.Reason.PROTOCOL_VIOLATION, "sandbox " + id
                    + " is closed: " + console.overflow().get() + ", so the host stopped the VM; start a new one");
        }
        if (closed.get()) {
            throw new SandboxLostException(SandboxLostException.Reason.CRASHED, "sandbox " + id + " is closed" + qemu.exitInfo()
                    .map(x -> " (QEMU " + x.describe() + ")").orElse("") + "; start a new one");
        }
    }

    @Override
    public boolean isAlive() {
        return !closed.get() && qemu.isAlive() && !transport.closed().isDone();
    }

    @Override
    public CompletableFuture<Void> onExit() {
        return exit;
    }

    @Override
    public Path consoleLog() {
        return state.consoleLog();
    }

    @Override
    public Path stderrLog() {
        return state.stderrLog();
    }

    @Override
    public Path stateDir() {
        return state.dir();
    }

    @Override
    public void close() {
        stop(true);
    }

    /**
     * Stops the VM without a word to the worker: QMP {@code quit}, then signals. For a VM that
     * must not run on (a saved template) or whose worker is not to be trusted with a GOODBYE.
     */
    public void discard() {
        stop(false);
    }

    /** How the sandbox was stopped (which rung of the ladder ended QEMU), once it was. */
    public java.util.Optional<StopReport> stopReport() {
        return java.util.Optional.ofNullable(stopReport);
    }

    /** Stops QEMU (gracefully if asked and possible) and releases everything. Idempotent. */
    StopReport stop(boolean graceful) {
        if (!closed.compareAndSet(false, true)) {
            exit.join();
            return null;
        }
        StopReport report = null;
        boolean wasPaused;
        synchronized (pauseLock) { // a pause after this point sees closed and does nothing
            wasPaused = paused;
        }
        try {
            StopLadder.Builder ladder = StopLadder.builder();
            if (graceful && !wasPaused && !transport.closed().isDone()) {
                ladder.step("goodbye", () -> transport.request(new Frame(FrameKind.GOODBYE, 0, (ObjectNode) null, null))
                        .get(5, TimeUnit.SECONDS), Duration.ofSeconds(15));
            }
            ladder.step("quit", () -> qmp.quit(Duration.ofSeconds(2)), Duration.ofSeconds(5))
                    .terminate(Duration.ofSeconds(5))
                    .kill(Duration.ofSeconds(10));
            report = qemu.stop(ladder.build());
            stopReport = report;
            LOG.log(System.Logger.Level.DEBUG, "sandbox " + id + " stopped: " + report);
        } finally {
            release();
        }
        return report;
    }

    private void release() {
        java.util.concurrent.ScheduledFuture<?> pause = pendingPause;
        if (pause != null) {
            pause.cancel(false); // nothing of a closed sandbox stays queued for its idle time
        }
        List<Throwable> problems = new ArrayList<>();
        for (AutoCloseable c : List.<AutoCloseable>of(transport::close, qmp::close, console::close, qemu::close)) {
            closeQuietly(c, problems);
        }
        extras.forEach(c -> closeQuietly(c, problems));
        try {
            state.delete();
        } catch (IOException e) {
            problems.add(e);
        }
        try {
            sockets.deleteDirectory();
        } catch (IOException e) {
            problems.add(e);
        }
        problems.forEach(p -> LOG.log(System.Logger.Level.WARNING, "sandbox " + id + ": cleanup: " + p));
        onClosed.accept(this);
        exit.complete(null);
    }

    private static void closeQuietly(AutoCloseable c, List<Throwable> problems) {
        try {
            c.close();
        } catch (Exception e) {
            problems.add(e);
        }
    }

    @Override
    public String toString() {
        return "QemuSandbox[" + id + " pid=" + qemu.pid() + (closed.get() ? " closed" : "") + "]";
    }
}
