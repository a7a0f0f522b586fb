package io.qvm;

import io.qvm.protocol.Messages;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.WorkerErrorException;
import io.qvm.protocol.WorkerStatus;
import io.qvm.transport.netty.SerialTransport;
import io.qvm.transport.testing.FakeWorker;
import io.qvm.transport.testing.FakeWorker.Effect;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A {@link SandboxBackend} whose sandboxes are {@link FakeWorker}s on real AF_UNIX sockets, reached
 * through the real {@link SerialTransport} and handshake: every request a pool makes is a real
 * frame (ECHO, STATUS, RENDER) answered by a peer that speaks the protocol. No QEMU.
 *
 * <pre>{@code
 * FakeSandboxBackend backend = new FakeSandboxBackend(tmp).restored(true);
 * backend.nextSandbox(s -> s.crashOnNextRequest(3));   // the next sandbox started dies of OOM
 * backend.failNextStarts(1);                            // the next start throws BootFailedException
 * }</pre>
 *
 * Every worker answers RENDER with {@link #RESULT}.
 */
final class FakeSandboxBackend implements SandboxBackend {

    static final Duration LONG = Duration.ofSeconds(30);

    /** A PNG signature and a few bytes: all {@link RenderResult} checks. */
    static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 0};
    static final RenderResult RESULT = new RenderResult(PNG, 64, 48, 7);

    private final Path dir;
    private volatile boolean restored;
    private final AtomicInteger failStarts = new AtomicInteger();
    private final ConcurrentLinkedQueue<Consumer<FakeSandbox>> setups = new ConcurrentLinkedQueue<>();
    private final List<FakeSandbox> sandboxes = new CopyOnWriteArrayList<>();
    private final AtomicInteger numbers = new AtomicInteger();
    private final AtomicInteger failedStarts = new AtomicInteger();
    private final AtomicInteger closes = new AtomicInteger();
    private volatile CountDownLatch gate;
    private final AtomicInteger waitingAtGate = new AtomicInteger();

    /** @param dir where the workers' sockets go (a short path: AF_UNIX paths are limited) */
    FakeSandboxBackend(Path dir) {
        this.dir = dir;
    }

    /** Whether the sandboxes started from now on report {@code bootReport().restored()}. */
    FakeSandboxBackend restored(boolean restoredFromTemplate) {
        this.restored = restoredFromTemplate;
        return this;
    }

    /** The next {@code n} starts throw {@link BootFailedException}. */
    FakeSandboxBackend failNextStarts(int n) {
        failStarts.set(n);
        return this;
    }

    /** Applied to the next sandbox started (several: to the next ones, in order), before it is returned. */
    FakeSandboxBackend nextSandbox(Consumer<FakeSandbox> setup) {
        setups.add(setup);
        return this;
    }

    /** Starts block until {@link #openGate()}. */
    FakeSandboxBackend closeGate() {
        gate = new CountDownLatch(1);
        return this;
    }

    void openGate() {
        CountDownLatch g = gate;
        gate = null;
        if (g != null) {
            g.countDown();
        }
    }

    /** Starts now blocked at the gate. */
    int waitingAtGate() {
        return waitingAtGate.get();
    }

    /** Every sandbox started, in start order. */
    List<FakeSandbox> sandboxes() {
        return List.copyOf(sandboxes);
    }

    FakeSandbox sandbox(String id) {
        return sandboxes.stream().filter(s -> s.id().equals(id)).findFirst().orElseThrow();
    }

    /** Sandboxes started successfully. */
    int starts() {
        return sandboxes.size();
    }

    int failedStarts() {
        return failedStarts.get();
    }

    /** Sandboxes closed (each counted once). */
    int closes() {
        return closes.get();
    }

    @Override
    public Sandbox start(SandboxConfig config) {
        CountDownLatch g = gate;
        if (g != null) {
            waitingAtGate.incrementAndGet();
            try {
                if (!g.await(LONG.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new BootFailedException("the test never opened the gate");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BootFailedException("interrupted at the gate", e);
            } finally {
                waitingAtGate.decrementAndGet();
            }
        }
        if (failStarts.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0) {
            failedStarts.incrementAndGet();
            throw new BootFailedException("fake boot failure");
        }
        String id = "fake-" + numbers.incrementAndGet();
        Limits limits = QemuVmBackend.limits(config);
        FakeWorker worker = null;
        SandboxTransport transport = null;
        try {
            worker = FakeWorker.builder().renders(RESULT).unix(dir.resolve(id + ".sock"));
            transport = SerialTransport.connect(worker.socketPath(), limits, LONG, () -> true);
            transport.handshake(Hello.fresh(limits), LONG);
        } catch (IOException | InterruptedException | RuntimeException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (transport != null) {
                transport.close();
            }
            closeQuietly(worker);
            failedStarts.incrementAndGet();
            throw new BootFailedException("fake sandbox " + id + " did not start: " + e, e);
        }
        BootReport report = new BootReport("fake", "fake", transport.kind(), Map.of("worker-ready", Duration.ZERO),
                List.of(), restored ? Optional.of("tpl") : Optional.empty());
        FakeSandbox s = new FakeSandbox(id, config, report, worker, transport, dir.resolve(id));
        Consumer<FakeSandbox> setup = setups.poll();
        if (setup != null) {
            setup.accept(s);
        }
        sandboxes.add(s);
        return s;
    }

    @Override
    public void close() {
        sandboxes.forEach(FakeSandbox::close);
    }

    private static void closeQuietly(FakeWorker w) {
        if (w != null) {
            try {
                w.close();
            } catch (IOException ignored) {
                // the test sees the effects, not this
            }
        }
    }

    /** One fake sandbox: a FakeWorker and the real transport connected to it. */
    final class FakeSandbox implements Sandbox {
        private final String id;
        private final SandboxConfig config;
        private final BootReport report;
        private final FakeWorker worker;
        private final SandboxTransport transport;
        private final Path stateDir;
        private final Object requestLock = new Object();
        private final AtomicBoolean closed = new AtomicBoolean();
        private final CompletableFuture<Void> exit = new CompletableFuture<>();
        private volatile Integer crashExitStatus;

        private FakeSandbox(String id, SandboxConfig config, BootReport report, FakeWorker worker,
                SandboxTransport transport, Path stateDir) {
            this.id = id;
            this.config = config;
            this.report = report;
            this.worker = worker;
            this.transport = transport;
            this.stateDir = stateDir;
        }

        /**
         * The worker hangs up on the next request (the VM died under it); the crash reports
         * {@code workerExitStatus} (null: none, 3: out of memory) as the guest init would.
         */
        FakeSandbox crashOnNextRequest(Integer workerExitStatus) {
            crashExitStatus = workerExitStatus;
            worker.enqueue(Effect.closeConnection());
            return this;
        }

        /** The worker answers the next request with a reply of the right kind but no valid header. */
        FakeSandbox breakProtocolOnNextRequest() {
            worker.enqueue(Effect.replyWithBody(8));
            return this;
        }

        /** The worker never answers the next request. */
        FakeSandbox stallNextRequest() {
            worker.enqueue(Effect.stall());
            return this;
        }

        FakeWorker worker() {
            return worker;
        }

        /** The requests its worker received (HELLO excluded). */
        List<Frame> requests() {
            return worker.received();
        }

        boolean closed() {
            return closed.get();
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
            return report;
        }

        @Override
        public byte[] echo(byte[] payload) {
            return call(Frame.of(FrameKind.ECHO, 0, payload), "echo").body();
        }

        @Override
        public RenderResult render(RenderRequest request) {
            Frame reply = call(Messages.toFrame(request, 0), "render");
            try {
                return Messages.renderResult(reply);
            } catch (IllegalArgumentException e) { // as QemuSandbox: the worker broke the protocol
                close();
                throw new SandboxLostException(SandboxLostException.Reason.PROTOCOL_VIOLATION, "sandbox " + id
                        + ": the worker's answer to the render request breaks the protocol (" + e.getMessage() + ")", e);
            }
        }

        @Override
        public WorkerStatus status() {
            return Messages.workerStatus(call(Frame.of(FrameKind.STATUS, 0, (ObjectNode) null), "status"));
        }

        /** As QemuSandbox.call: the request deadline, typed failures, a dead sandbox closed. */
        private Frame call(Frame request, String what) {
            synchronized (requestLock) {
                if (closed.get()) {
                    throw new SandboxLostException(SandboxLostException.Reason.CRASHED, "sandbox " + id + " is closed");
                }
                CompletableFuture<Frame> reply = transport.request(request);
                try {
                    return reply.get(config.requestTimeout().toMillis(), TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    reply.cancel(false);
                    close();
                    throw new SandboxLostException(SandboxLostException.Reason.DEADLINE_EXCEEDED, "the " + what + " request of " + id + " overran its deadline");
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof WorkerErrorException w) {
                        throw new RenderFailedException(w.code(), w.reply().message());
                    }
                    close();
                    throw new SandboxLostException(SandboxLostException.Reason.CRASHED, "sandbox " + id + " died during the " + what + " request: "
                            + e.getCause(), e.getCause(), null, null, crashExitStatus);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SandboxException("interrupted", e);
                }
            }
        }

        @Override
        public boolean isAlive() {
            return !closed.get() && !transport.closed().isDone();
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
            return stateDir.resolve("qemu.stderr");
        }

        @Override
        public Path stateDir() {
            return stateDir;
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            transport.close();
            closeQuietly(worker);
            closes.incrementAndGet();
            exit.complete(null);
        }

        @Override
        public String toString() {
            return "FakeSandbox[" + id + (closed.get() ? " closed" : "") + "]";
        }
    }
}
