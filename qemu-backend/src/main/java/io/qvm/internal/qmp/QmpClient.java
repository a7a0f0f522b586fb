package io.qvm.internal.qmp;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.protocol.util.ControlChars;
import io.qvm.protocol.util.Retry;
import java.io.EOFException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * A client for QEMU's machine protocol (QMP) on a unix socket (or TCP where AF_UNIX is missing).
 *
 * <h2>Usage</h2>
 * <pre>{@code
 * try (QmpClient qmp = QmpClient.builder(socketPath)
 *         .connectTimeout(Duration.ofSeconds(30))
 *         .processAlive(qemu::isAlive)          // fail fast if QEMU dies while we wait
 *         .eventListener(event -> event.shutdown().ifPresent(s -> log(s.reason())))
 *         .connect()) {                          // greeting + qmp_capabilities done here
 *     QmpStatus status = qmp.queryStatus();
 *     qmp.systemPowerdown();
 *     ...
 *     qmp.quit(Duration.ofSeconds(5));           // returns normally when QEMU hangs up
 * }
 * }</pre>
 *
 * <h2>Wire format</h2>
 * One JSON object per line in each direction ({@code \n} or {@code \r\n}); the client caps a line
 * at {@link Builder#maxLineBytes(int)} (1 MiB by default) before buffering it.
 * <pre>
 * QEMU   → {"QMP": {"version": {...}, "capabilities": ["oob"]}}        greeting, once
 * client → {"execute": "qmp_capabilities", "id": "qvm-1"}
 * QEMU   → {"return": {}, "id": "qvm-1"}
 * client → {"execute": "query-status", "id": "qvm-2"}
 * QEMU   → {"timestamp": {...}, "event": "STOP"}                      events at any time
 * QEMU   → {"return": {"status": "running", ...}, "id": "qvm-2"}
 * client → {"execute": "nope", "id": "qvm-3"}
 * QEMU   → {"id": "qvm-3", "error": {"class": "CommandNotFound", "desc": "..."}}
 * </pre>
 *
 * <h2>Behaviour</h2>
 * <ul>
 *   <li>One daemon reader thread per client reads lines, completes the command futures by
 *       {@code id} and hands events to listeners in arrival order. Replies with an unknown id
 *       (e.g. to a command that already timed out) are logged and dropped; messages that are JSON
 *       objects but neither reply nor event are logged and ignored; unknown fields are ignored.
 *   <li>Every command has a deadline ({@link QmpTimeoutException}); the connection survives it.
 *   <li>EOF or a socket error fails every pending command at once with
 *       {@link QmpConnectionClosedException}, and so does every later command.
 *   <li><b>Protocol errors fail closed.</b> A line that is not JSON, JSON that is not an object,
 *       or a line over the cap never kills the reader by surprise: the reader logs it, fails every
 *       pending command with {@link QmpProtocolException} and closes the connection (origin
 *       {@link QmpConnectionClosedException.Origin#PROTOCOL_ERROR}). Reason: QEMU never emits such
 *       lines, so the peer is broken or hostile, and a reply we could not read can no longer be
 *       matched to its command; the lifecycle code then stops QEMU with signals.
 *   <li>Events that arrive before the greeting or before the capabilities reply are delivered to
 *       listeners registered on the builder.
 * </ul>
 *
 * Thread-safe. {@link #close()} is idempotent.
 */
public final class QmpClient implements AutoCloseable {

    public static final int DEFAULT_MAX_LINE_BYTES = 1 << 20;
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(10);

    static final ObjectMapper MAPPER = new ObjectMapper();
    private static final System.Logger LOG = System.getLogger(QmpClient.class.getName());
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final Duration FIRST_BACKOFF = Duration.ofMillis(10);
    private static final Duration MAX_BACKOFF = Duration.ofMillis(200);
    private static final ScheduledThreadPoolExecutor TIMEOUTS = timeoutScheduler();

    private final SocketAddress address;
    private final SocketChannel channel;
    private final Duration commandTimeout;
    private final int maxLineBytes;
    private final List<QmpEventListener> listeners;
    private final Map<String, Pending> pending = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);
    private final Object writeLock = new Object();
    private final CompletableFuture<QmpGreeting> greeting = new CompletableFuture<>();
    private final CompletableFuture<QmpConnectionClosedException> closed = new CompletableFuture<>();
    private final Object closeLock = new Object();
    private volatile QmpConnectionClosedException closeReason;
    private final Thread reader;

    private QmpClient(Builder b, SocketChannel channel) {
        this.address = b.address;
        this.channel = channel;
        this.commandTimeout = b.commandTimeout;
        this.maxLineBytes = b.maxLineBytes;
        this.listeners = new CopyOnWriteArrayList<>(b.listeners);
        this.reader = new Thread(this::readLoop, b.threadName != null ? b.threadName : "qvm-qmp-reader " + describe(address));
        this.reader.setDaemon(true);
        this.reader.start();
    }

    /** A builder for a client of the QMP unix socket at {@code socket}. */
    public static Builder builder(Path socket) {
        return new Builder(UnixDomainSocketAddress.of(Objects.requireNonNull(socket, "socket")));
    }

    /**
     * A builder for a client of {@code address}: a {@link UnixDomainSocketAddress} or an
     * {@link InetSocketAddress} (QEMU's {@code -qmp tcp:127.0.0.1:PORT,server=on,wait=off}, for
     * hosts without AF_UNIX).
     */
    public static Builder builder(SocketAddress address) {
        return new Builder(address);
    }

    // ------------------------------------------------------------------ commands

    /**
     * Sends {@code command} with optional {@code arguments}; the future completes with the
     * {@code return} value, or exceptionally with a {@link QmpException} subclass. Never blocks
     * for the reply (it blocks only while writing the command to the socket).
     */
    public CompletableFuture<JsonNode> executeAsync(String command, ObjectNode arguments, Duration timeout) {
        checkCommand(command);
        checkTimeout(timeout);
        QmpConnectionClosedException already = closeReason;
        if (already != null) {
            return CompletableFuture.failedFuture(already.forCommand(command));
        }
        String id = "qvm-" + nextId.getAndIncrement();
        Pending p = new Pending(command, new CompletableFuture<>());
        pending.put(id, p);
        if (closeReason != null) { // closed between the check and the put: whoever removes it fails it
            if (pending.remove(id, p)) {
                p.future.completeExceptionally(closeReason.forCommand(command));
            }
            return p.future;
        }
        ObjectNode message = MAPPER.createObjectNode();
        message.put("execute", command);
        if (arguments != null && !arguments.isEmpty()) {
            message.set("arguments", arguments);
        }
        message.put("id", id);
        ScheduledFuture<?> timer = TIMEOUTS.schedule(() -> {
            if (pending.remove(id, p)) {
                p.future.completeExceptionally(new QmpTimeoutException(command, timeout));
            }
        }, timeout.toNanos(), TimeUnit.NANOSECONDS);
        p.future.whenComplete((r, e) -> timer.cancel(false));
        try {
            write(message);
        } catch (IOException e) {
            shutdown(new QmpConnectionClosedException(QmpConnectionClosedException.Origin.IO_ERROR,
                    "writing to the QMP socket failed: " + e, e));
        }
        return p.future;
    }

    /** {@link #executeAsync} and wait for the reply. */
    public JsonNode execute(String command, ObjectNode arguments, Duration timeout)
            throws QmpException, InterruptedException {
        refuseOnReaderThread(command);
        return await(executeAsync(command, arguments, timeout));
    }

    /** {@link #execute(String, ObjectNode, Duration)} with no arguments and the default timeout. */
    public JsonNode execute(String command) throws QmpException, InterruptedException {
        return execute(command, null, commandTimeout);
    }

    /** {@code query-status}: QEMU's run state. */
    public QmpStatus queryStatus() throws QmpException, InterruptedException {
        return QmpStatus.parse(execute("query-status"));
    }

    /** {@code system_powerdown}: asks the guest to power off (ACPI). Returns once QEMU accepted it. */
    public void systemPowerdown() throws QmpException, InterruptedException {
        execute("system_powerdown");
    }

    /** {@code stop}: pauses the vCPUs. */
    public void stop() throws QmpException, InterruptedException {
        execute("stop");
    }

    /** {@code cont}: resumes the vCPUs. */
    public void cont() throws QmpException, InterruptedException {
        execute("cont");
    }

    /** {@link #quit(Duration)} with the default command timeout. */
    public void quit() throws QmpException, InterruptedException {
        quit(commandTimeout);
    }

    /**
     * {@code quit}: QEMU exits at once. Returns normally when QEMU replied, and also when QEMU
     * closed the connection before replying (EOF or reset) — both mean it is exiting. Throws if
     * the connection was closed by this client or after a protocol error, on timeout, or if QEMU
     * answered with an error.
     */
    public void quit(Duration timeout) throws QmpException, InterruptedException {
        try {
            execute("quit", null, timeout);
        } catch (QmpConnectionClosedException e) {
            if (!e.closedByPeer()) {
                throw e;
            }
        }
    }

    // ------------------------------------------------------------------ state

    /** QEMU's greeting (available once {@link Builder#connect()} returned). */
    public QmpGreeting greeting() {
        return greeting.getNow(null);
    }

    public SocketAddress address() {
        return address;
    }

    /** True until the connection is closed by either side. */
    public boolean isOpen() {
        return closeReason == null;
    }

    /** Completes (normally) with the reason once the connection is closed, by either side. */
    public CompletableFuture<QmpConnectionClosedException> whenClosed() {
        return closed.copy();
    }

    /** Waits until the connection is closed; true if it closed within {@code timeout}. */
    public boolean awaitClosed(Duration timeout) throws InterruptedException {
        refuseOnReaderThread("awaitClosed");
        try {
            closed.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true; // not reachable: closed only completes normally
        }
    }

    public void addEventListener(QmpEventListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    public void removeEventListener(QmpEventListener listener) {
        listeners.remove(listener);
    }

    /** Closes the socket and fails pending commands (origin {@code LOCAL_CLOSE}). Idempotent. */
    @Override
    public void close() {
        shutdown(new QmpConnectionClosedException(QmpConnectionClosedException.Origin.LOCAL_CLOSE,
                "the QMP client was closed by the caller", null));
    }

    @Override
    public String toString() {
        return "QmpClient[" + describe(address) + (isOpen() ? ", open" : ", closed") + "]";
    }

    // ------------------------------------------------------------------ reader

    private void readLoop() {
        QmpLineReader lines = new QmpLineReader(channel, maxLineBytes);
        QmpConnectionClosedException reason;
        try {
            while (true) {
                handleLine(lines.next());
            }
        } catch (EOFException e) {
            reason = new QmpConnectionClosedException(QmpConnectionClosedException.Origin.PEER_EOF,
                    "QEMU closed the QMP connection (" + e.getMessage() + ")", null);
        } catch (QmpProtocolException e) {
            LOG.log(Level.WARNING, "QMP protocol error on {0}; closing the connection: {1}",
                    describe(address), e.getMessage());
            // closed first, then pending commands fail with the protocol error itself: a caller
            // that sees the error also sees isOpen() == false
            shutdown(new QmpConnectionClosedException(QmpConnectionClosedException.Origin.PROTOCOL_ERROR,
                    "the QMP connection was closed after a protocol error: " + e.getMessage(), e), e);
            return;
        } catch (IOException e) {
            reason = new QmpConnectionClosedException(QmpConnectionClosedException.Origin.IO_ERROR,
                    "QMP socket error: " + e, e);
        } catch (RuntimeException | Error e) {
            LOG.log(Level.ERROR, "QMP reader failed unexpectedly on " + describe(address), e);
            reason = new QmpConnectionClosedException(QmpConnectionClosedException.Origin.PROTOCOL_ERROR,
                    "the QMP reader failed unexpectedly: " + e, e);
        }
        shutdown(reason, reason);
    }

    private void handleLine(byte[] line) throws QmpProtocolException {
        QmpMessage message = QmpMessage.read(line);
        if (message instanceof QmpMessage.Greeting g) {
            if (!greeting.complete(g.greeting())) {
                LOG.log(Level.WARNING, "ignoring a second QMP greeting: {0}", excerpt(line, 120));
            }
        } else if (message instanceof QmpMessage.Event e) {
            onEvent(e.event());
        } else if (message instanceof QmpMessage.Reply r) {
            onReply(r);
        } else if (message instanceof QmpMessage.Ignored i) {
            LOG.log(Level.DEBUG, "ignoring a QMP message ({0}): {1}", i.why(), excerpt(line, 120));
        }
    }

    private void onEvent(QmpEvent event) {
        for (QmpEventListener l : listeners) {
            try {
                l.onEvent(event);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "QMP event listener " + l + " failed on " + event.name(), e);
            }
        }
    }

    private void onReply(QmpMessage.Reply reply) {
        Pending p = reply.id() != null ? pending.remove(reply.id()) : null;
        if (p == null) {
            LOG.log(Level.DEBUG, "dropping a QMP reply with unknown id {0} (late reply to a timed-out command?)",
                    reply.id() == null ? null : ControlChars.escape(reply.id()));
            return;
        }
        if (reply.error() != null) {
            p.future.completeExceptionally(new QmpErrorException(p.command, reply.error().errorClass(),
                    reply.error().description()));
        } else {
            p.future.complete(reply.result());
        }
    }

    // ------------------------------------------------------------------ plumbing

    private void write(ObjectNode message) throws IOException {
        byte[] bytes;
        try {
            bytes = MAPPER.writeValueAsBytes(message);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("cannot serialise QMP command " + message.path("execute"), e);
        }
        ByteBuffer buf = ByteBuffer.allocate(bytes.length + 1).put(bytes).put((byte) '\n').flip();
        synchronized (writeLock) {
            while (buf.hasRemaining()) {
                channel.write(buf);
            }
        }
    }

    private void shutdown(QmpConnectionClosedException reason) {
        shutdown(reason, reason);
    }

    /** Closes once: records {@code reason}, closes the socket, fails pending commands with {@code pendingCause}. */
    private void shutdown(QmpConnectionClosedException reason, QmpException pendingCause) {
        synchronized (closeLock) {
            if (closeReason != null) {
                return;
            }
            closeReason = reason;
        }
        try {
            channel.close();
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "closing the QMP socket failed", e);
        }
        greeting.completeExceptionally(pendingCause);
        failAll(pendingCause);
        closed.complete(reason);
    }

    private void failAll(QmpException cause) {
        for (String id : new ArrayList<>(pending.keySet())) {
            Pending p = pending.remove(id);
            if (p != null) {
                p.future.completeExceptionally(cause instanceof QmpConnectionClosedException c ? c.forCommand(p.command) : cause);
            }
        }
    }

    private static <T> T await(CompletableFuture<T> future) throws QmpException, InterruptedException {
        try {
            return future.get();
        } catch (ExecutionException e) {
            throw asQmpException(e.getCause());
        }
    }

    private static QmpException asQmpException(Throwable t) {
        if (t instanceof QmpException q) {
            return q;
        }
        return new QmpConnectionClosedException(QmpConnectionClosedException.Origin.PROTOCOL_ERROR,
                "unexpected failure: " + t, t);
    }

    private void refuseOnReaderThread(String what) {
        if (Thread.currentThread() == reader) {
            throw new IllegalStateException("blocking QMP call '" + what + "' on the QMP reader thread "
                    + "(from an event listener) would deadlock; use executeAsync or another thread");
        }
    }

    private static void checkCommand(String command) {
        if (command == null || command.isBlank()) {
            throw new IllegalArgumentException("QMP command must not be blank");
        }
    }

    private static void checkTimeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
    }

    /** A printable excerpt of raw input: at most {@code max} bytes, control characters escaped. */
    static String excerpt(byte[] bytes, int max) {
        int n = Math.min(bytes.length, max);
        StringBuilder out = new StringBuilder(ControlChars.escape(new String(bytes, 0, n, StandardCharsets.UTF_8)));
        if (bytes.length > n) {
            out.append("... (").append(bytes.length).append(" bytes)");
        }
        return out.toString();
    }

    private static String describe(SocketAddress address) {
        return address instanceof UnixDomainSocketAddress u ? u.getPath().toString() : String.valueOf(address);
    }

    private static ScheduledThreadPoolExecutor timeoutScheduler() {
        ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "qvm-qmp-timeouts");
            t.setDaemon(true);
            return t;
        });
        s.setRemoveOnCancelPolicy(true);
        return s;
    }

    private record Pending(String command, CompletableFuture<JsonNode> future) {}

    // ------------------------------------------------------------------ builder

    /**
     * Configures and opens a {@link QmpClient}. Every default lives here: connect timeout 30 s,
     * command timeout 10 s, line cap 1 MiB, process assumed alive.
     */
    public static final class Builder {
        private final SocketAddress address;
        private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
        private int maxLineBytes = DEFAULT_MAX_LINE_BYTES;
        private BooleanSupplier processAlive = () -> true;
        private final List<QmpEventListener> listeners = new ArrayList<>();
        private String threadName;

        private Builder(SocketAddress address) {
            Objects.requireNonNull(address, "address");
            if (!(address instanceof UnixDomainSocketAddress) && !(address instanceof InetSocketAddress)) {
                throw new IllegalArgumentException("QMP address must be a UnixDomainSocketAddress or an "
                        + "InetSocketAddress, got " + address.getClass().getName());
            }
            this.address = address;
        }

        /** How long {@link #connect()} may take in total: socket, greeting and negotiation. */
        public Builder connectTimeout(Duration timeout) {
            checkTimeout(timeout);
            this.connectTimeout = timeout;
            return this;
        }

        /** Deadline for the convenience commands ({@link #queryStatus()} etc.). */
        public Builder commandTimeout(Duration timeout) {
            checkTimeout(timeout);
            this.commandTimeout = timeout;
            return this;
        }

        /** The longest line accepted from QEMU; a longer one is a protocol error. */
        public Builder maxLineBytes(int max) {
            if (max < 64 || max > (1 << 30)) {
                throw new IllegalArgumentException("maxLineBytes must be in [64, 2^30], got " + max);
            }
            this.maxLineBytes = max;
            return this;
        }

        /** Checked while connecting: once it returns false, {@link #connect()} fails at once. */
        public Builder processAlive(BooleanSupplier alive) {
            this.processAlive = Objects.requireNonNull(alive, "alive");
            return this;
        }

        /** A listener registered before the reader starts, so it sees even the earliest events. */
        public Builder eventListener(QmpEventListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /** The reader thread's name (default {@code qvm-qmp-reader <socket>}). */
        public Builder threadName(String name) {
            this.threadName = Objects.requireNonNull(name, "name");
            return this;
        }

        /**
         * Connects (retrying while the socket file does not exist yet or refuses connections),
         * reads the greeting and negotiates capabilities, all within the connect timeout.
         *
         * @throws QmpConnectException naming the unmet condition
         * @throws InterruptedException if interrupted while waiting
         */
        public QmpClient connect() throws QmpConnectException, InterruptedException {
            Retry retry = Retry.until(connectTimeout, FIRST_BACKOFF, MAX_BACKOFF, processAlive);
            SocketChannel channel = open(retry);
            QmpClient client = new QmpClient(this, channel);
            try {
                awaitStep(client.greeting, retry, "the QMP greeting");
                awaitStep(client.executeAsync("qmp_capabilities", null,
                        Duration.ofNanos(Math.max(1, retry.remainingNanos()))), retry, "the qmp_capabilities reply");
                return client;
            } catch (QmpConnectException | InterruptedException | RuntimeException e) {
                client.close();
                throw e;
            }
        }

        private SocketChannel open(Retry retry) throws QmpConnectException, InterruptedException {
            Exception last = null;
            while (true) {
                if (readyToConnect()) {
                    SocketChannel ch = null;
                    try {
                        ch = address instanceof UnixDomainSocketAddress
                                ? SocketChannel.open(StandardProtocolFamily.UNIX)
                                : SocketChannel.open();
                        ch.connect(address);
                        return ch;
                    } catch (ConnectException e) { // refused: QEMU not listening yet (or a stale file)
                        last = e;
                        closeQuietly(ch);
                    } catch (IOException e) {
                        closeQuietly(ch);
                        if (readyToConnect()) {
                            throw new QmpConnectException(QmpConnectException.Reason.UNREACHABLE,
                                    "cannot connect to QMP socket " + describe(address) + ": " + e
                                            + " (check the path and its permissions)", e);
                        }
                        last = e; // the socket file vanished between the check and the connect
                    }
                }
                failIfDeadOrLate(retry, "QMP socket " + describe(address) + " to accept a connection", last);
                retry.pause("connecting to QMP socket " + describe(address));
            }
        }

        private boolean readyToConnect() {
            return !(address instanceof UnixDomainSocketAddress u) || Files.exists(u.getPath());
        }

        private <T> T awaitStep(CompletableFuture<T> step, Retry retry, String what)
                throws QmpConnectException, InterruptedException {
            while (true) {
                try {
                    return step.get(Math.min(POLL_NANOS, Math.max(1, retry.remainingNanos())), TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    failIfDeadOrLate(retry, what + " on " + describe(address), null);
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof QmpTimeoutException) {
                        failIfDeadOrLate(retry, what + " on " + describe(address), cause);
                    }
                    if (!retry.peerAlive()) {
                        throw new QmpConnectException(QmpConnectException.Reason.PROCESS_EXITED,
                                "QEMU exited while waiting for " + what + " on " + describe(address), cause);
                    }
                    throw new QmpConnectException(QmpConnectException.Reason.HANDSHAKE_FAILED,
                            "QMP handshake on " + describe(address) + " failed while waiting for " + what + ": "
                                    + cause.getMessage(), cause);
                }
            }
        }

        private void failIfDeadOrLate(Retry retry, String what, Throwable last) throws QmpConnectException {
            if (!retry.peerAlive()) {
                throw new QmpConnectException(QmpConnectException.Reason.PROCESS_EXITED,
                        "QEMU exited while waiting for " + what, last);
            }
            if (retry.expired()) {
                throw new QmpConnectException(QmpConnectException.Reason.DEADLINE,
                        "timed out after " + connectTimeout.toMillis() + " ms waiting for " + what
                                + (last == null ? "" : " (last error: " + last + ")"), last);
            }
        }

        private static void closeQuietly(SocketChannel ch) {
            if (ch != null) {
                try {
                    ch.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        }
    }
}
