package io.qvm;

import io.qvm.transport.RenderRequest;
import io.qvm.transport.RenderResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A fixed number of sandboxes of one {@link SandboxConfig}, for a server that renders many
 * documents: each call borrows a live sandbox (starting one when none is idle and the pool is not
 * full), runs one request, and gives it back. A sandbox that died or was stopped — a request
 * that overran its deadline ({@link RequestTimeoutException}), a crash
 * ({@link SandboxCrashedException}) — is dropped, so the next request gets a fresh one; a
 * render whose sandbox crashed is retried once (see {@link #render}).
 *
 * <pre>{@code
 * try (SandboxPool pool = SandboxPool.of(QemuVmBackend.create(), SandboxConfig.defaults(), 2)) {
 *     RenderResult png = pool.render(RenderRequest.svg(bytes));
 * }
 * }</pre>
 *
 * Sandboxes start lazily; {@link #warmUp()} starts them all ahead of the first request. A
 * caller waits at most the boot deadline plus the request deadline for a free sandbox.
 */
public final class SandboxPool implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(SandboxPool.class.getName());

    private final SandboxBackend backend;
    private final SandboxConfig config;
    private final int size;
    private final LinkedBlockingDeque<Sandbox> idle = new LinkedBlockingDeque<>();
    private final List<Sandbox> all = new ArrayList<>();
    private boolean closed;

    private SandboxPool(SandboxBackend backend, SandboxConfig config, int size) {
        this.backend = Objects.requireNonNull(backend, "backend");
        this.config = Objects.requireNonNull(config, "config");
        if (size < 1 || size > 64) {
            throw new IllegalArgumentException("size = " + size + " is invalid: allowed 1..64");
        }
        this.size = size;
    }

    /** A pool of at most {@code size} sandboxes of {@code config}; the pool does not close {@code backend}. */
    public static SandboxPool of(SandboxBackend backend, SandboxConfig config, int size) {
        return new SandboxPool(backend, config, size);
    }

    /** Starts sandboxes until the pool is full. */
    public void warmUp() {
        List<Sandbox> started = new ArrayList<>();
        try {
            while (true) {
                Sandbox s = startIfRoom();
                if (s == null) {
                    break;
                }
                started.add(s);
            }
        } finally {
            started.forEach(this::giveBack);
        }
    }

    /**
     * Renders in a pooled sandbox; see {@link Sandbox#render} for the exceptions. A render whose
     * sandbox died under it ({@link SandboxCrashedException}) is tried once more in a fresh
     * sandbox: a worker that aborted for a reason of its own (see {@code QemuVmBackend}'s boot
     * retry) should not fail the document, and a document that kills the worker every time still
     * fails, on the second try. A timeout is never retried.
     */
    public RenderResult render(RenderRequest request) {
        try {
            return withSandbox(s -> s.render(request));
        } catch (SandboxCrashedException first) {
            LOG.log(System.Logger.Level.WARNING, "a sandbox died during a render; retrying once in a fresh "
                    + "sandbox: " + first.getMessage().lines().findFirst().orElse(""));
            try {
                return withSandbox(s -> s.render(request));
            } catch (SandboxCrashedException second) {
                second.addSuppressed(first);
                throw second;
            }
        }
    }

    /** Echoes through a pooled sandbox; see {@link Sandbox#echo}. */
    public byte[] echo(byte[] payload) {
        return withSandbox(s -> s.echo(payload));
    }

    /** Runs {@code work} on a borrowed sandbox and gives it back (or drops it if it died). */
    public <T> T withSandbox(Function<Sandbox, T> work) {
        Sandbox s = borrow();
        try {
            return work.apply(s);
        } finally {
            giveBack(s);
        }
    }

    /** Sandboxes alive in the pool now (busy or idle). */
    public synchronized int live() {
        return all.size();
    }

    private Sandbox borrow() {
        Sandbox s = idle.pollFirst();
        while (s != null && !s.isAlive()) {
            drop(s);
            s = idle.pollFirst();
        }
        if (s != null) {
            return s;
        }
        s = startIfRoom();
        if (s != null) {
            return s;
        }
        Duration wait = config.bootTimeout().plus(config.requestTimeout());
        try {
            s = idle.pollFirst(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException("interrupted while waiting for a free sandbox", e);
        }
        if (s == null) {
            throw new SandboxException("no sandbox of the pool became free within " + wait.toSeconds()
                    + " s (all " + size + " busy); enlarge the pool or lower the request deadline");
        }
        if (!s.isAlive()) {
            drop(s);
            return borrow();
        }
        return s;
    }

    /** Starts one more sandbox if the pool has room (outside the lock: a boot takes seconds). */
    private Sandbox startIfRoom() {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the pool is closed");
            }
            if (all.size() >= size) {
                return null;
            }
            all.add(null); // reserve the place while booting
        }
        Sandbox s = null;
        try {
            s = backend.start(config);
            return s;
        } finally {
            synchronized (this) {
                all.remove(null);
                if (s != null) {
                    all.add(s);
                }
            }
        }
    }

    private void giveBack(Sandbox s) {
        boolean keep;
        synchronized (this) {
            keep = !closed && s.isAlive();
        }
        if (keep) {
            idle.offerFirst(s);
        } else {
            drop(s);
        }
    }

    private void drop(Sandbox s) {
        synchronized (this) {
            all.remove(s);
        }
        s.close();
    }

    /** Closes every sandbox of the pool (idle ones at once, busy ones when given back). Idempotent. */
    @Override
    public void close() {
        List<Sandbox> toClose;
        synchronized (this) {
            closed = true;
            toClose = new ArrayList<>(idle);
            idle.clear();
        }
        toClose.forEach(this::drop);
    }
}
