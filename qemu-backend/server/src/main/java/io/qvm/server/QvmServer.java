package io.qvm.server;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.qvm.SandboxConfig;
import io.qvm.SandboxPool;
import io.qvm.admin.QvmLibrary;
import io.qvm.server.internal.Admission;
import io.qvm.server.internal.HttpService;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * qvm's render service: HTTP in front of a {@link SandboxPool}, what {@code qvm serve} runs.
 *
 * <pre>{@code
 * try (QemuVmBackend backend = QemuVmBackend.create();
 *      SandboxPool pool = SandboxPool.builder(backend, SandboxConfig.defaults()).minIdle(1).build();
 *      QvmServer server = QvmServer.builder(pool)
 *              .listen(new InetSocketAddress("127.0.0.1", 8080))
 *              .tenants(Tenants.load(Path.of("tenants.txt")))
 *              .build()
 *              .start()) {
 *     ...
 *     server.drain(Duration.ofSeconds(90));   // on SIGTERM: finish what was taken, take nothing new
 * }
 * }</pre>
 *
 * <table>
 * <caption>Endpoints</caption>
 * <tr><td>{@code POST /v1/render}</td><td>the document as the body ({@code image/svg+xml},
 *     {@code application/pdf}) or one multipart part {@code file}; query {@code width},
 *     {@code height}, {@code dpi}, {@code page}, {@code background} as {@code qvm render} takes
 *     them. 200 {@code image/png} with {@code X-Qvm-Width}, {@code X-Qvm-Height},
 *     {@code X-Qvm-Render-Millis}, {@code X-Request-Id}; else {@code application/problem+json}.</td></tr>
 * <tr><td>{@code GET /healthz}</td><td>alive; touches no sandbox</td></tr>
 * <tr><td>{@code GET /readyz}</td><td>200 once the warm-up proved the host, the template and a
 *     warm sandbox; 503 while starting, after a failed warm-up (retried), and while draining</td></tr>
 * <tr><td>{@code GET /metrics}</td><td>Prometheus text</td></tr>
 * <tr><td>{@code GET /v1/info}</td><td>version, limits, and what the embedder adds ({@link Builder#about})</td></tr>
 * </table>
 *
 * <p>Each request's tenant — from its bearer token ({@link Tenants}) — is the pool's caller key:
 * whatever the pool's recycle policy, two tenants never share a VM. The server does not close the
 * pool; close the pool after {@link #drain} or {@link #close}.
 */
public final class QvmServer implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(QvmServer.class.getName());

    private final SandboxPool pool;
    private final InetSocketAddress listen;
    private final Tenants tenants;
    private final Admission admission;
    private final HttpService http;
    private final boolean warmUp;
    private final Duration warmUpRetry;
    private final Map<String, Object> about;
    private final String version;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private volatile Channel server;
    private volatile boolean warm;
    private volatile String notReady = "starting: the warm-up has not finished";
    private volatile Thread warmer;
    private volatile boolean closed;

    private QvmServer(Builder b) {
        this.pool = b.pool;
        this.listen = b.listen;
        this.tenants = b.tenants;
        this.warmUp = b.warmUp;
        this.warmUpRetry = b.warmUpRetry;
        this.about = Map.copyOf(b.about);
        this.version = QvmLibrary.version().orElse("dev");
        int threads = b.renderThreads > 0 ? b.renderThreads : pool.maxSandboxes();
        int queue = b.maxQueue >= 0 ? b.maxQueue : 2 * pool.maxSandboxes();
        int cap = b.tenantCap > 0 ? b.tenantCap
                : tenants.names().size() > 1 ? Math.max(1, (threads + queue) / 2) : threads + queue;
        this.admission = new Admission(threads, queue, cap);
        this.http = new HttpService(pool, tenants, admission, new HttpService.Limits(b.headerTimeout, b.readTimeout,
                b.idleTimeout, b.maxConnections, b.maxInitialLineBytes, b.maxHeaderBytes,
                b.maxBufferedBytes > 0 ? b.maxBufferedBytes : (threads + queue + 2L) * bodyCap(pool)), version,
                this::whyNotReady,
                this::info, b.accessLog);
        this.boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        this.workers = new MultiThreadIoEventLoopGroup(b.ioThreads, NioIoHandler.newFactory());
    }

    /** The most bytes one request's body may have: the largest document and a multipart envelope. */
    private static long bodyCap(SandboxPool pool) {
        return pool.config().maxRequestBytes() + io.qvm.server.internal.RenderInput.MULTIPART_SLACK;
    }

    public static Builder builder(SandboxPool pool) {
        return new Builder(pool);
    }

    /**
     * Binds the address and starts the warm-up (readiness follows it); requests are served from
     * now on (a render before the warm-up finished waits for its sandbox like any other).
     *
     * @throws java.io.UncheckedIOException the address cannot be bound
     */
    public QvmServer start() {
        if (server != null || closed) {
            throw new IllegalStateException(closed ? "this server is closed" : "this server was started already");
        }
        try {
            server = new ServerBootstrap().group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_BACKLOG, 256)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(http.initializer())
                    .bind(listen).sync().channel();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            shutdownLoops();
            throw new IllegalStateException("interrupted while binding " + listen, e);
        } catch (Exception e) {
            shutdownLoops();
            throw new java.io.UncheckedIOException(new java.io.IOException("cannot listen on " + listen + ": "
                    + e.getMessage(), e));
        }
        if (warmUp) {
            Thread t = new Thread(this::warmUpLoop, "qvm-serve-warmup");
            t.setDaemon(true);
            warmer = t;
            t.start();
        } else {
            warm = true;
        }
        return this;
    }

    private void warmUpLoop() {
        while (!closed && !http.draining()) {
            try {
                // the host checked, the template there, a sandbox warm (the pool's own starts count too)
                if (pool.awaitWarm(pool.config().bootTimeout().plus(pool.acquireTimeout()))) {
                    warm = true;
                    LOG.log(System.Logger.Level.INFO, "qvm serve: ready on " + address());
                    return;
                }
                if (closed || http.draining()) {
                    return;
                }
                notReady = "starting: no sandbox became idle within the boot deadline yet";
                continue;
            } catch (RuntimeException e) {
                if (closed || http.draining()) {
                    return;
                }
                notReady = "the warm-up failed (retried in " + warmUpRetry.toMillis() + " ms): "
                        + e.getMessage().lines().findFirst().orElse(e.getClass().getSimpleName());
                LOG.log(System.Logger.Level.WARNING, "qvm serve: " + notReady);
                LOG.log(System.Logger.Level.DEBUG, "the warm-up's failure", e);
            }
            try {
                Thread.sleep(warmUpRetry.toMillis());
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private Optional<String> whyNotReady() {
        return warm ? Optional.empty() : Optional.of(notReady);
    }

    /** Whether {@code GET /readyz} answers 200 now. */
    public boolean isReady() {
        return warm && !http.draining() && !closed;
    }

    /** The address bound (with the port the system chose for port 0). */
    public InetSocketAddress address() {
        Channel s = server;
        if (s == null) {
            throw new IllegalStateException("not started");
        }
        return (InetSocketAddress) s.localAddress();
    }

    /** What {@code GET /v1/info} answers. */
    public Map<String, Object> info() {
        SandboxConfig c = pool.config();
        Map<String, Object> limits = new LinkedHashMap<>();
        limits.put("maxRequestBytes", c.maxRequestBytes());
        limits.put("maxResponseBytes", c.maxResponseBytes());
        limits.put("maxPixels", c.maxPixels());
        limits.put("maxSide", c.maxSide());
        limits.put("maxPages", c.maxPages());
        limits.put("requestTimeoutMillis", c.requestTimeout().toMillis());
        limits.put("bootTimeoutMillis", c.bootTimeout().toMillis());
        limits.put("memoryMib", c.memoryMib());
        limits.put("vcpus", c.vcpus());
        Map<String, Object> service = new LinkedHashMap<>();
        service.put("maxSandboxes", pool.maxSandboxes());
        service.put("minIdle", pool.minIdle());
        SandboxPool.Recycle recycle = pool.recycle();
        service.put("recycle", recycle.equals(SandboxPool.Recycle.perRequest()) ? "perRequest"
                : recycle.equals(SandboxPool.Recycle.perCaller()) ? "perCaller" : recycle.toString());
        service.put("maxQueue", admission.maxQueue());
        service.put("tenantMaxRequests", admission.tenantCap());
        service.put("tenantsRequired", tenants.required());
        service.put("maxBufferedBytes", http.maxBufferedBytes());
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("version", version);
        out.putAll(about);
        out.put("limits", limits);
        out.put("service", service);
        return out;
    }

    /**
     * Drains: readiness fails at once, the listening socket closes (new connections are refused),
     * idle connections close, a request arriving on an open connection is answered 503, and the
     * requests already taken — rendering or queued — finish, each within its own deadline, or
     * until {@code grace} has passed. Then every connection is closed.
     *
     * @return whether every request taken was answered within {@code grace}
     */
    public boolean drain(Duration grace) {
        http.drain();
        Channel s = server;
        if (s != null) {
            s.close().awaitUninterruptibly(5_000);
        }
        boolean done;
        try {
            done = admission.awaitIdle(grace);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            done = false;
        }
        LOG.log(System.Logger.Level.INFO, "qvm serve: drained" + (done ? "" : "; " + admission.admitted()
                + " requests still running after " + grace.toSeconds() + " s"));
        return done;
    }

    /** Requests taken and not answered yet (rendering or queued). */
    public int pending() {
        return admission.admitted();
    }

    /**
     * Stops at once: no new connections; requests still running are given 10 s (close the pool
     * first to make them end now); then every connection and thread is closed. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        http.drain();
        Thread w = warmer;
        if (w != null) {
            w.interrupt();
        }
        Channel s = server;
        if (s != null) {
            s.close().awaitUninterruptibly(5_000);
        }
        try {
            admission.awaitIdle(Duration.ofSeconds(10));
            admission.shutdown();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        http.closeConnections();
        http.metrics().close();
        shutdownLoops();
    }

    private void shutdownLoops() {
        boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
        workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
    }

    /** Builder for {@link QvmServer}; every default lives here. */
    public static final class Builder {
        private final SandboxPool pool;
        private InetSocketAddress listen = new InetSocketAddress("127.0.0.1", 8080);
        private Tenants tenants = Tenants.none();
        private boolean insecure;
        private int renderThreads;
        private int maxQueue = -1;
        private int tenantCap;
        private int ioThreads = 2;
        private int maxConnections = 256;
        private int maxInitialLineBytes = 8 * 1024;
        private int maxHeaderBytes = 16 * 1024;
        private long maxBufferedBytes;
        private Duration headerTimeout = Duration.ofSeconds(10);
        private Duration readTimeout = Duration.ofSeconds(30);
        private Duration idleTimeout = Duration.ofSeconds(60);
        private Duration warmUpRetry = Duration.ofSeconds(15);
        private boolean warmUp = true;
        private final Map<String, Object> about = new LinkedHashMap<>();
        private Consumer<String> accessLog = line -> { };

        private Builder(SandboxPool pool) {
            this.pool = Objects.requireNonNull(pool, "pool");
        }

        /** Where to listen (default 127.0.0.1:8080; port 0: any free port, see {@link QvmServer#address()}). */
        public Builder listen(InetSocketAddress address) {
            this.listen = Objects.requireNonNull(address, "address");
            return this;
        }

        /** Who may render (default {@link Tenants#none()}: no token asked, loopback only unless {@link #insecure}). */
        public Builder tenants(Tenants tenants) {
            this.tenants = Objects.requireNonNull(tenants, "tenants");
            return this;
        }

        /** Allows listening on a non-loopback address without tenants: anyone who reaches it may render. */
        public Builder insecure(boolean insecure) {
            this.insecure = insecure;
            return this;
        }

        /** Render requests waiting for a render thread beyond those rendering (default twice the pool's maxSandboxes). */
        public Builder maxQueue(int n) {
            this.maxQueue = check("maxQueue", n, 0, 10_000);
            return this;
        }

        /**
         * Most requests of one tenant rendering or queued at once (default: half of threads and
         * queue together when there are two tenants or more, else all of them).
         */
        public Builder tenantMaxRequests(int n) {
            this.tenantCap = check("tenantMaxRequests", n, 1, 10_000);
            return this;
        }

        /** Render threads (default the pool's maxSandboxes: one per sandbox it may hold). */
        public Builder renderThreads(int n) {
            this.renderThreads = check("renderThreads", n, 1, 1024);
            return this;
        }

        /** Most open connections; one above it is closed at once (default 256). */
        public Builder maxConnections(int n) {
            this.maxConnections = check("maxConnections", n, 1, 100_000);
            return this;
        }

        /** Longest request line (default 8 KiB; above: 414). */
        public Builder maxInitialLineBytes(int n) {
            this.maxInitialLineBytes = check("maxInitialLineBytes", n, 256, 1 << 20);
            return this;
        }

        /** Most bytes of headers (default 16 KiB; above: 431). */
        public Builder maxHeaderBytes(int n) {
            this.maxHeaderBytes = check("maxHeaderBytes", n, 1024, 1 << 20);
            return this;
        }

        /**
         * The most bytes of request bodies received and held at once, across all connections
         * (default: render threads plus queue plus two, times the largest body). A render request
         * reserves its {@code Content-Length} — a chunked one the largest body — from its headers
         * and gives it back with its answer; one that does not fit is 429 before its body is read.
         * Size the JVM's heap above it (each body is copied about three times on its way).
         */
        public Builder maxBufferedBytes(long bytes) {
            if (bytes < 1 << 20) {
                throw new IllegalArgumentException("maxBufferedBytes must be at least 1 MiB, got " + bytes);
            }
            this.maxBufferedBytes = bytes;
            return this;
        }

        /** From a request's first byte to its last header (default 10 s; beyond: 408, closed). */
        public Builder headerTimeout(Duration d) {
            this.headerTimeout = positive("headerTimeout", d);
            return this;
        }

        /** From a request's first byte to its last body byte (default 30 s; beyond: 408, closed). */
        public Builder readTimeout(Duration d) {
            this.readTimeout = positive("readTimeout", d);
            return this;
        }

        /** A kept-alive connection with no request is closed after this long (default 60 s). */
        public Builder idleTimeout(Duration d) {
            this.idleTimeout = positive("idleTimeout", d);
            return this;
        }

        /** Whether {@link #start()} warms the pool up, and readiness waits for it (default true). */
        public Builder warmUp(boolean warmUp) {
            this.warmUp = warmUp;
            return this;
        }

        /** How long after a failed warm-up the next is tried (default 15 s). */
        public Builder warmUpRetry(Duration d) {
            this.warmUpRetry = positive("warmUpRetry", d);
            return this;
        }

        /** Adds {@code key} to {@code GET /v1/info} (e.g. the accelerator, the image's hashes). */
        public Builder about(String key, Object value) {
            about.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Receives one line per answered request: id, tenant, endpoint, status, code, milliseconds. */
        public Builder accessLog(Consumer<String> log) {
            this.accessLog = Objects.requireNonNull(log, "log");
            return this;
        }

        /**
         * @throws IllegalStateException a non-loopback address without tenants, unless {@link #insecure}
         */
        public QvmServer build() {
            if (!tenants.required() && !insecure && !listen.getAddress().isLoopbackAddress()) {
                throw new IllegalStateException("refusing to listen on " + listen.getAddress().getHostAddress()
                        + " without tenants: anyone who reaches it could render. Give a tenants file (one line per "
                        + "tenant, tenant:<sha256 of its token>), or listen on 127.0.0.1, or say insecure explicitly");
            }
            if (listen.isUnresolved()) {
                throw new IllegalStateException("cannot resolve " + listen.getHostString());
            }
            return new QvmServer(this);
        }

        private static int check(String name, int n, int min, int max) {
            if (n < min || n > max) {
                throw new IllegalArgumentException(name + " must be " + min + ".." + max + ", got " + n);
            }
            return n;
        }

        private static Duration positive(String name, Duration d) {
            Objects.requireNonNull(d, name);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive, got " + d);
            }
            return d;
        }
    }
}
