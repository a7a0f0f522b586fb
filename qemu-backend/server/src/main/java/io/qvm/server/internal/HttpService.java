package io.qvm.server.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.qvm.SandboxPool;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.server.Tenants;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The HTTP side of {@code qvm serve}: one pipeline per connection, one job per handler.
 *
 * <pre>
 *  bytes --> FirstByte ---> HttpServerCodec ---> Gate ---------------> BodyAggregator --> Router
 *            (connection     (request line and   (route, method,        (the body, up to    (answers; a render
 *             cap; the        headers under       token, type and        its cap: 413        goes to Admission,
 *             header timer)   their caps)         length from headers;   beyond, for a       its answer comes
 *                                                 read timer; refusals   chunked body too)   back on the loop)
 *                                                 before any body)
 * </pre>
 *
 * A request refused from its headers is answered before its body is read, and its connection is
 * closed (the body is never read). Reads pause while a request is being answered: one request per
 * connection at a time, a pipelining client waits.
 */
public final class HttpService {

    private static final System.Logger LOG = System.getLogger(HttpService.class.getName());
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    static final String PROBLEM_JSON = "application/problem+json";
    static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    /** The HTTP-level limits (the body's comes from the pool's config). */
    /**
     * @param maxBufferedBytes the most bytes of request bodies held at once, across connections:
     *     a render request reserves its {@code Content-Length} (a chunked one, the most a body may
     *     be) from its headers, and gives it back with its answer; one that does not fit is 429
     */
    public record Limits(Duration headerTimeout, Duration readTimeout, Duration idleTimeout, int maxConnections,
            int maxInitialLineBytes, int maxHeaderBytes, long maxBufferedBytes) {
        public Limits {
            Objects.requireNonNull(headerTimeout, "headerTimeout");
            Objects.requireNonNull(readTimeout, "readTimeout");
            Objects.requireNonNull(idleTimeout, "idleTimeout");
        }
    }

    private final SandboxPool pool;
    private final Tenants tenants;
    private final Admission admission;
    private final Limits limits;
    private final Supplier<Optional<String>> notReady;
    private final Supplier<Map<String, Object>> info;
    private final Consumer<String> accessLog;
    private final long maxDocumentBytes;
    private final int maxBodyBytes;
    /** Bytes of request bodies reserved now ({@link Limits#maxBufferedBytes}). */
    private final java.util.concurrent.atomic.AtomicLong buffered = new java.util.concurrent.atomic.AtomicLong();
    private final ChannelGroup channels = new DefaultChannelGroup("qvm-serve", GlobalEventExecutor.INSTANCE);
    private final AtomicInteger connections = new AtomicInteger();
    private final ServerMetrics metrics;
    private volatile boolean draining;

    /**
     * @param notReady why the service is not ready (empty: ready)
     * @param info what {@code GET /v1/info} answers
     */
    public HttpService(SandboxPool pool, Tenants tenants, Admission admission, Limits limits, String version,
            Supplier<Optional<String>> notReady, Supplier<Map<String, Object>> info, Consumer<String> accessLog) {
        this.pool = pool;
        this.tenants = tenants;
        this.admission = admission;
        this.limits = limits;
        this.notReady = notReady;
        this.info = info;
        this.accessLog = accessLog;
        this.maxDocumentBytes = pool.config().maxRequestBytes();
        this.maxBodyBytes = (int) Math.min(Integer.MAX_VALUE - RenderInput.MULTIPART_SLACK,
                maxDocumentBytes) + RenderInput.MULTIPART_SLACK;
        this.metrics = new ServerMetrics(pool, version, admission::queued, admission::running, connections::get,
                buffered::get, () -> draining);
    }

    /** The initializer for each accepted connection. */
    public ChannelInitializer<SocketChannel> initializer() {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                ch.attr(Conn.KEY).set(new Conn(ch));
                ch.pipeline().addLast("first-byte", new FirstByte())
                        .addLast("codec", new HttpServerCodec(new HttpDecoderConfig()
                                .setMaxInitialLineLength(limits.maxInitialLineBytes())
                                .setMaxHeaderSize(limits.maxHeaderBytes())
                                .setMaxChunkSize(64 * 1024)))
                        .addLast("gate", new Gate())
                        .addLast("body", new BodyAggregator(maxBodyBytes))
                        .addLast("router", new Router());
            }
        };
    }

    public ServerMetrics metrics() {
        return metrics;
    }

    public boolean draining() {
        return draining;
    }

    public int connections() {
        return connections.get();
    }

    /**
     * Stops taking requests: readiness fails, idle connections are closed now, a connection closes
     * after the answer it owes, and a request arriving is answered 503.
     */
    public void drain() {
        draining = true;
        for (Channel ch : channels) {
            ch.eventLoop().execute(() -> {
                Conn c = Conn.of(ch);
                if (c != null && c.phase == Conn.Phase.IDLE) {
                    ch.close();
                }
            });
        }
    }

    /** Closes every connection now. */
    public void closeConnections() {
        channels.close().awaitUninterruptibly(5_000);
    }

    // ---- the answer ------------------------------------------------------------------------------

    private FullHttpResponse response(HttpResponseStatus status, String contentType, byte[] body) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.wrappedBuffer(body));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length)
                .set(HttpHeaderNames.CACHE_CONTROL, "no-store")
                .set("X-Content-Type-Options", "nosniff");
        return r;
    }

    private FullHttpResponse problemResponse(Conn c, Problem p) {
        ObjectNode o = JSON.createObjectNode();
        o.put("type", "urn:qvm:problem:" + p.code().toLowerCase(java.util.Locale.ROOT).replace('_', '-'));
        o.put("title", p.title());
        o.put("status", p.status());
        if (!p.detail().isEmpty()) {
            o.put("detail", p.detail());
        }
        o.put("code", p.code());
        o.put("requestId", c.requestId);
        o.put("retryable", p.retryable());
        byte[] body;
        try {
            body = JSON.writeValueAsBytes(o);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        FullHttpResponse r = response(HttpResponseStatus.valueOf(p.status()), PROBLEM_JSON, body);
        if (p.retryAfterSeconds() > 0) {
            r.headers().setInt(HttpHeaderNames.RETRY_AFTER, p.retryAfterSeconds());
        }
        if (p.status() == 401) {
            r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"qvm\"");
        }
        if (p.status() == 405) {
            r.headers().set(HttpHeaderNames.ALLOW, "render".equals(c.endpoint) ? "POST" : "GET, HEAD");
        }
        return r;
    }

    /** Sends a problem; the connection closes after it when {@code close}. Any thread. */
    void sendProblem(Conn c, Problem p, boolean close) {
        send(c, problemResponse(c, p), p.code(), close);
    }

    /**
     * Writes {@code r} as the answer to the connection's current request, records it, and then
     * either closes the connection or returns it to {@link Conn.Phase#IDLE} with reads resumed.
     * Any thread: the bookkeeping runs on the connection's event loop.
     */
    void send(Conn c, FullHttpResponse r, String code, boolean close) {
        if (!c.channel.eventLoop().inEventLoop()) {
            c.channel.eventLoop().execute(() -> send(c, r, code, close));
            return;
        }
        if (!c.channel.isActive()) {
            ReferenceCountUtil.release(r);
            record(c, r.status().code(), code, " (client gone)");
            return;
        }
        boolean closing = close || !c.keepAlive || draining;
        releaseBody(c);
        r.headers().set("X-Request-Id", c.requestId);
        r.headers().set(HttpHeaderNames.CONNECTION, closing ? HttpHeaderValues.CLOSE : HttpHeaderValues.KEEP_ALIVE);
        c.disarm();
        c.phase = closing ? Conn.Phase.CLOSING : Conn.Phase.BUSY;
        record(c, r.status().code(), code, "");
        c.channel.writeAndFlush(r).addListener((ChannelFutureListener) f -> {
            if (closing || !f.isSuccess()) {
                c.channel.close();
                return;
            }
            c.phase = Conn.Phase.IDLE;
            c.arm(limits.idleTimeout(), c.channel::close);
            c.channel.config().setAutoRead(true);
        });
    }

    /** Reserves {@code bytes} of the body budget for the connection's request; whether they fit. */
    private boolean reserveBody(Conn c, long bytes) {
        long now = buffered.addAndGet(bytes);
        if (now > limits.maxBufferedBytes() && now != bytes) { // one request alone is always allowed its cap
            buffered.addAndGet(-bytes);
            return false;
        }
        c.reservedBytes = bytes;
        return true;
    }

    private void releaseBody(Conn c) {
        if (c.reservedBytes > 0) {
            buffered.addAndGet(-c.reservedBytes);
            c.reservedBytes = 0;
        }
    }

    /** Bytes of request bodies reserved now. */
    public long bufferedBytes() {
        return buffered.get();
    }

    public long maxBufferedBytes() {
        return limits.maxBufferedBytes();
    }

    /** Counts the answer in the metrics and writes its access-log line ({@code note} only there). */
    private void record(Conn c, int status, String code, String note) {
        metrics.request(c.endpoint, status, code, c.startNanos);
        long ms = (System.nanoTime() - c.startNanos) / 1_000_000;
        accessLog.accept(c.requestId + " " + (c.tenant.isEmpty() ? "-" : c.tenant) + " " + c.endpoint + " " + status
                + " " + code + note + " " + ms + "ms");
    }

    // ---- the handlers ----------------------------------------------------------------------------

    /** Counts connections (closing those above the cap), and starts a request's header timer at its first byte. */
    private final class FirstByte extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            Conn c = Conn.of(ctx.channel());
            if (connections.incrementAndGet() > limits.maxConnections() || draining) {
                ctx.close(); // above the cap: no answer, no read (a flood gets nothing to chew on)
                return;
            }
            channels.add(ctx.channel());
            c.arm(limits.idleTimeout(), ctx::close);
            ctx.fireChannelActive();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            connections.decrementAndGet();
            Conn c = Conn.of(ctx.channel());
            c.disarm();
            releaseBody(c);
            ctx.fireChannelInactive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Conn c = Conn.of(ctx.channel());
            if (c.phase == Conn.Phase.CLOSING) {
                ReferenceCountUtil.release(msg); // the rest of a refused request: never read
                return;
            }
            if (c.phase == Conn.Phase.IDLE && msg instanceof ByteBuf b && b.isReadable()) {
                c.begin();
                c.arm(limits.headerTimeout(), () -> sendProblem(c, Problem.timeout("the request line and headers did "
                        + "not arrive within " + limits.headerTimeout().toMillis() + " ms"), true));
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            LOG.log(System.Logger.Level.DEBUG, "connection error", cause);
            ctx.close();
        }
    }

    /** Routes a request from its headers and refuses what can be refused before its body is read. */
    private final class Gate extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Conn c = Conn.of(ctx.channel());
            if (c.phase == Conn.Phase.CLOSING) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (msg instanceof HttpRequest req) {
                c.phase = Conn.Phase.BODY;
                c.arm(limits.readTimeout(), () -> sendProblem(c, Problem.timeout("the request did not arrive whole "
                        + "within " + limits.readTimeout().toMillis() + " ms of its first byte"), true));
                Optional<Problem> refused;
                try {
                    refused = check(c, req);
                } catch (RuntimeException e) {
                    refused = Optional.of(Problem.badRequest("unreadable request"));
                }
                if (refused.isPresent()) {
                    ReferenceCountUtil.release(msg);
                    c.phase = Conn.Phase.CLOSING;
                    sendProblem(c, refused.get(), true);
                    return;
                }
            }
            ctx.fireChannelRead(msg);
        }

        private Optional<Problem> check(Conn c, HttpRequest req) {
            if (req.decoderResult().isFailure()) {
                Throwable cause = req.decoderResult().cause();
                return Optional.of(cause instanceof TooLongHttpLineException ? Problem.uriTooLong()
                        : cause instanceof TooLongHttpHeaderException ? Problem.headersTooLarge()
                        : cause instanceof TooLongFrameException ? Problem.headersTooLarge()
                        : Problem.badRequest("malformed HTTP request"));
            }
            c.keepAlive = HttpUtil.isKeepAlive(req);
            String path = new QueryStringDecoder(req.uri()).path();
            c.endpoint = switch (path) {
                case "/v1/render" -> "render";
                case "/v1/info" -> "info";
                case "/healthz" -> "healthz";
                case "/readyz" -> "readyz";
                case "/metrics" -> "metrics";
                default -> "other";
            };
            if (c.endpoint.equals("other")) {
                return Optional.of(Problem.notFound());
            }
            boolean render = c.endpoint.equals("render");
            HttpMethod m = req.method();
            if (render ? !m.equals(HttpMethod.POST) : !(m.equals(HttpMethod.GET) || m.equals(HttpMethod.HEAD))) {
                return Optional.of(Problem.methodNotAllowed());
            }
            if (draining && !c.endpoint.equals("healthz") && !c.endpoint.equals("readyz")) {
                return Optional.of(Problem.draining());
            }
            if (render || c.endpoint.equals("info")) {
                Optional<String> tenant = tenant(req);
                if (tenant.isEmpty()) {
                    return Optional.of(Problem.unauthorized());
                }
                c.tenant = tenant.get();
            }
            long length = HttpUtil.getContentLength(req, -1L);
            if (!render) {
                return length > 0 || HttpUtil.isTransferEncodingChunked(req)
                        ? Optional.of(Problem.badRequest("a " + m + " request carries no body")) : Optional.empty();
            }
            String type = RenderInput.mediaType(req.headers().get(HttpHeaderNames.CONTENT_TYPE));
            if (!RenderInput.accepted(type)) {
                return Optional.of(Problem.unsupportedType(type));
            }
            long cap = type.equals(RenderInput.MULTIPART) ? maxBodyBytes : maxDocumentBytes;
            if (length > cap) {
                return Optional.of(Problem.tooLarge(length, maxDocumentBytes));
            }
            if (!reserveBody(c, length >= 0 ? length : maxBodyBytes)) {
                return Optional.of(Problem.bodiesBusy(limits.maxBufferedBytes()));
            }
            return Optional.empty();
        }

        /** The tenant of the request's bearer token; {@link Tenants#ANONYMOUS} where no tokens are asked for. */
        private Optional<String> tenant(HttpRequest req) {
            if (!tenants.required()) {
                return Optional.of(Tenants.ANONYMOUS);
            }
            String auth = req.headers().get(HttpHeaderNames.AUTHORIZATION);
            if (auth == null || auth.length() < 8 || !auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
                return Optional.empty();
            }
            return tenants.authenticate(auth.substring(7).strip());
        }
    }

    /** The body, whole, up to its cap: beyond it (a long chunked body too) 413 and the connection closed. */
    private final class BodyAggregator extends HttpObjectAggregator {
        BodyAggregator(int maxBytes) {
            super(maxBytes);
        }

        @Override
        protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
            Conn c = Conn.of(ctx.channel());
            c.phase = Conn.Phase.CLOSING;
            sendProblem(c, Problem.tooLarge(0, maxDocumentBytes), true);
        }
    }

    /** Answers a whole request; a render runs on a render thread (Admission), never on the loop. */
    private final class Router extends SimpleChannelInboundHandler<FullHttpRequest> {
        Router() {
            super(false);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
            Conn c = Conn.of(ctx.channel());
            c.disarm();
            c.phase = Conn.Phase.BUSY;
            ctx.channel().config().setAutoRead(false);
            boolean head = req.method().equals(HttpMethod.HEAD);
            try {
                switch (c.endpoint) {
                    case "healthz" -> plain(c, HttpResponseStatus.OK, "ok\n", head);
                    case "readyz" -> ready(c, head);
                    case "metrics" -> send(c, body(response(HttpResponseStatus.OK, PROMETHEUS_TEXT,
                            metrics.scrape().getBytes(StandardCharsets.UTF_8)), head), "OK", false);
                    case "info" -> send(c, body(response(HttpResponseStatus.OK, "application/json",
                            JSON.writeValueAsBytes(info.get())), head), "OK", false);
                    case "render" -> {
                        ReferenceCountUtil.retain(req);
                        Optional<Problem> refused = admission.admit(c.tenant, () -> render(c, req));
                        if (refused.isPresent()) {
                            req.release();
                            sendProblem(c, refused.get(), false);
                        }
                    }
                    default -> sendProblem(c, Problem.notFound(), false);
                }
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                sendProblem(c, Problem.of(e), false);
            } finally {
                req.release();
            }
        }

        private void ready(Conn c, boolean head) {
            Optional<String> why = draining ? Optional.of("draining: this instance is shutting down") : notReady.get();
            if (why.isEmpty()) {
                plain(c, HttpResponseStatus.OK, "ready\n", head);
            } else {
                FullHttpResponse r = response(HttpResponseStatus.SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
                        ("not ready: " + why.get() + "\n").getBytes(StandardCharsets.UTF_8));
                r.headers().setInt(HttpHeaderNames.RETRY_AFTER, Problem.RETRY_UNAVAILABLE_SECONDS);
                send(c, body(r, head), "NOT_READY", false);
            }
        }

        private void plain(Conn c, HttpResponseStatus status, String text, boolean head) {
            send(c, body(response(status, "text/plain; charset=utf-8", text.getBytes(StandardCharsets.UTF_8)), head),
                    "OK", false);
        }

        /** HEAD: the headers of GET, no body. */
        private FullHttpResponse body(FullHttpResponse r, boolean head) {
            if (head) {
                FullHttpResponse h = r.replace(Unpooled.EMPTY_BUFFER);
                r.release();
                return h;
            }
            return r;
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            LOG.log(System.Logger.Level.DEBUG, "connection error", cause);
            ctx.close();
        }
    }

    /** On a render thread: the document through the pool, the PNG or the problem back. */
    private void render(Conn c, FullHttpRequest req) {
        try {
            RenderRequest request = RenderInput.parse(req, maxDocumentBytes);
            long t0 = System.nanoTime();
            RenderResult result = pool.render(c.tenant, request);
            long took = (System.nanoTime() - t0) / 1_000_000;
            FullHttpResponse r = response(HttpResponseStatus.OK, "image/png", result.png());
            r.headers().setInt("X-Qvm-Width", result.width())
                    .setInt("X-Qvm-Height", result.height())
                    .set("X-Qvm-Render-Millis", Long.toString(result.renderMillis()))
                    .set("X-Qvm-Sandbox-Millis", Long.toString(took))
                    .set("X-Qvm-Tenant", c.tenant);
            send(c, r, "OK", false);
        } catch (ProblemException e) {
            sendProblem(c, e.problem(), false);
        } catch (RuntimeException e) {
            Problem p = Problem.of(e);
            if (p.status() >= 500) {
                LOG.log(System.Logger.Level.WARNING, "request " + c.requestId + " (tenant " + c.tenant + "): "
                        + p.code() + ": " + Problem.firstLine(e.getMessage()));
                LOG.log(System.Logger.Level.DEBUG, "request " + c.requestId + " failed", e);
            }
            sendProblem(c, p, false);
        } finally {
            req.release();
        }
    }
}
