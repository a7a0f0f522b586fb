package io.qvm.cli.control;

import io.qvm.protocol.Messages;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.RenderFailedException;
import io.qvm.SandboxLostException;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.FrameWriter;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Ready;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The control socket of a CLI-hosted sandbox ({@code ctl.sock}, AF_UNIX, in the sandbox's socket
 * directory): the one place other {@code qvm} processes reach a sandbox through, since the
 * sandbox's own worker connection can have only one host end (a virtio-serial port gives the
 * guest EOF when the host side disconnects, which ends the worker).
 *
 * <p>It speaks the worker's frame protocol (adr/0003: {@link FrameReader}/{@link FrameWriter},
 * magic + version + CRC-checked prefix, JSON header, binary body). A client needs no handshake;
 * each request frame is answered by exactly one frame carrying the client's request id:
 *
 * <pre>
 *  client → server          server → client
 *  ---------------          ---------------------------------------------------------------
 *  HELLO {nonce,…}          READY {nonce, version "qvm-control/1", capabilities}   (optional)
 *  ECHO  body               ECHO_REPLY body                    relayed through Sandbox.echo
 *  RENDER {type,…} doc      RENDER_RESULT {format,width,…,servedBy} png    relayed to the target
 *  GOODBYE                  GOODBYE {"stopped": true}          after the sandbox has stopped
 *  anything else            ERROR {code, message, kind}
 * </pre>
 *
 * A RENDER_RESULT's header adds, when the target knows it, {@code servedBy}: {@code {"sandbox":
 * id, "mode": "fresh-per-render"|"reused", "earlierDocuments": n, "restored": bool}} — which
 * sandbox rendered the document and whether it had served others before ({@link ControlTarget.ServedBy}).
 *
 * <p>The server keeps time: {@link #idleFor()} is how long no ECHO or RENDER has been in
 * progress; {@link #endIfIdle} and {@link #endAccepting} make it refuse every later request
 * (ERROR, kind {@value #KIND_INTERNAL}, saying why the session ends) so that its owner can stop
 * the sandbox without cutting a render short.
 *
 * <p>ERROR headers carry the worker's {@link ErrorCode} and message, plus {@code kind}: which
 * exception the {@link ControlTarget} threw — {@value #KIND_RENDER_FAILED},
 * {@value #KIND_TIMEOUT}, {@value #KIND_CRASHED}, {@value #KIND_BAD_REQUEST} or
 * {@value #KIND_INTERNAL} — so that {@link ControlClient} rethrows the same typed exception the
 * in-process API would. A request above {@code requestLimits} is skipped without allocation and
 * answered with ERROR TOO_LARGE.
 *
 * <p>Each connection is served by one thread, requests in order; the target serialises requests
 * across connections. Closing stops accepting, closes every connection and deletes the socket.
 */
public final class ControlServer implements AutoCloseable {

    public static final String VERSION = "qvm-control/1";
    public static final String KIND_RENDER_FAILED = "render-failed";
    public static final String KIND_TIMEOUT = "timeout";
    public static final String KIND_CRASHED = "crashed";
    public static final String KIND_BAD_REQUEST = "bad-request";
    public static final String KIND_INTERNAL = "internal";
    /** Connections served at once; more wait in the accept backlog. */
    static final int MAX_CONNECTIONS = 16;
    private static final FrameLimits REPLY_LIMITS = new FrameLimits(FrameLimits.HEADER_CEILING, FrameLimits.BODY_CEILING);

    private final Path socket;
    private final ControlTarget target;
    private final FrameLimits requestLimits;
    private final Consumer<String> log;
    private final ServerSocketChannel server;
    private final Thread acceptor;
    private final List<SocketChannel> connections = new CopyOnWriteArrayList<>();
    private final AtomicInteger served = new AtomicInteger();
    private final CompletableFuture<Void> goodbyeReceived = new CompletableFuture<>();
    private final CompletableFuture<Void> stopRequested = new CompletableFuture<>();
    private final java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(MAX_CONNECTIONS);
    private volatile boolean closed;
    /** Guards the activity fields below. */
    private final Object activity = new Object();
    private int inFlight;
    private long lastActivityNanos = System.nanoTime();
    private String ending;

    private ControlServer(Path socket, ControlTarget target, FrameLimits requestLimits, Consumer<String> log,
            ServerSocketChannel server) {
        this.socket = socket;
        this.target = target;
        this.requestLimits = requestLimits;
        this.log = log;
        this.server = server;
        this.acceptor = new Thread(this::acceptLoop, "qvm-control-accept");
        acceptor.setDaemon(true);
    }

    /**
     * Binds {@code socket} (replacing a stale socket file) and starts serving.
     *
     * @param requestLimits what a request may carry (the sandbox's own request limit)
     * @param log one line per request served
     */
    public static ControlServer start(Path socket, ControlTarget target, FrameLimits requestLimits, Consumer<String> log)
            throws IOException {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(requestLimits, "requestLimits");
        io.qvm.admin.SandboxStates.checkSocketPath(socket);
        Files.deleteIfExists(socket);
        ServerSocketChannel ch = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            ch.bind(UnixDomainSocketAddress.of(socket));
        } catch (IOException e) {
            ch.close();
            throw new IOException("cannot listen on the control socket " + socket + ": " + e.getMessage(), e);
        }
        ControlServer s = new ControlServer(socket, target, requestLimits, log == null ? l -> { } : log, ch);
        s.acceptor.start();
        return s;
    }

    public Path socket() {
        return socket;
    }

    /** Completes as soon as a client's GOODBYE arrives (before the target is stopped). */
    public CompletableFuture<Void> goodbyeReceived() {
        return goodbyeReceived;
    }

    /** Completes once a client's GOODBYE has stopped the target and was answered. */
    public CompletableFuture<Void> stopRequested() {
        return stopRequested;
    }

    /** Requests answered so far (HELLO excluded). */
    public int requestsServed() {
        return served.get();
    }

    /** How long no ECHO or RENDER has been in progress; zero while one is. */
    public Duration idleFor() {
        synchronized (activity) {
            return inFlight > 0 ? Duration.ZERO : Duration.ofNanos(System.nanoTime() - lastActivityNanos);
        }
    }

    /**
     * If no request has been in progress for {@code idle}, refuses every later request (saying
     * {@code why}) and returns true; otherwise changes nothing. Atomic with a request's start.
     */
    public boolean endIfIdle(Duration idle, String why) {
        synchronized (activity) {
            if (ending == null && inFlight == 0 && System.nanoTime() - lastActivityNanos >= idle.toNanos()) {
                ending = Objects.requireNonNull(why, "why");
                activity.notifyAll();
            }
            return ending != null && inFlight == 0;
        }
    }

    /**
     * Refuses every request from now on (saying {@code why}) and waits up to {@code wait} for those
     * in progress to be answered.
     *
     * @return true when none is left in progress
     */
    public boolean endAccepting(String why, Duration wait) throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        synchronized (activity) {
            if (ending == null) {
                ending = Objects.requireNonNull(why, "why");
            }
            while (inFlight > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(activity, left);
            }
            return true;
        }
    }

    /** Whether requests are still taken ({@link #endAccepting} not called yet). */
    public boolean accepting() {
        synchronized (activity) {
            return ending == null;
        }
    }

    /** Counts a request in, or says why the server no longer takes any. */
    private String begin() {
        synchronized (activity) {
            if (ending != null) {
                return ending;
            }
            inFlight++;
            return null;
        }
    }

    private void finished() {
        synchronized (activity) {
            inFlight--;
            lastActivityNanos = System.nanoTime();
            activity.notifyAll();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel ch;
            try {
                slots.acquire();
                ch = server.accept();
            } catch (IOException | InterruptedException e) {
                slots.release();
                return; // closed
            }
            connections.add(ch);
            Thread t = new Thread(() -> serve(ch), "qvm-control-conn");
            t.setDaemon(true);
            t.start();
        }
    }

    private void serve(SocketChannel ch) {
        // One thread reads and writes, never at once (JDK 17's channel streams share a lock).
        try (ch) {
            InputStream in = Channels.newInputStream(ch);
            OutputStream out = Channels.newOutputStream(ch);
            FrameReader reader = new FrameReader(in, requestLimits);
            FrameWriter writer = new FrameWriter(out, REPLY_LIMITS);
            while (!closed) {
                Frame f;
                try {
                    f = reader.read();
                } catch (FrameTooLargeException e) {
                    writer.write(error(e.requestId(), ErrorCode.TOO_LARGE, KIND_RENDER_FAILED, e.getMessage()));
                    continue;
                } catch (FrameException e) {
                    continue; // corrupt frame: skipped, go on with the next one
                }
                if (f == null) {
                    return;
                }
                writer.write(answer(f));
                if (f.kind() == FrameKind.GOODBYE) {
                    stopRequested.complete(null);
                    return;
                }
            }
        } catch (IOException e) {
            // the client went away; nothing to answer
        } finally {
            connections.remove(ch);
            slots.release();
        }
    }

    /** The one frame that answers {@code f}; never throws. */
    Frame answer(Frame f) {
        if (f.kind() != FrameKind.ECHO && f.kind() != FrameKind.RENDER) {
            return answerNow(f);
        }
        String refused = begin();
        if (refused != null) {
            log.accept(f.kind().name().toLowerCase(java.util.Locale.ROOT) + " refused: " + refused);
            return error(f.requestId(), ErrorCode.INTERNAL, KIND_INTERNAL, refused);
        }
        try {
            return answerNow(f);
        } finally {
            finished();
        }
    }

    private Frame answerNow(Frame f) {
        long id = f.requestId();
        try {
            switch (f.kind()) {
                case HELLO: {
                    Hello h = Messages.hello(f);
                    return Messages.toFrame(new Ready(h.nonce(), VERSION, List.of("echo", "render", "goodbye")));
                }
                case ECHO: {
                    byte[] reply = target.echo(f.body());
                    served.incrementAndGet();
                    log.accept("echo " + f.body().length + " bytes");
                    return Frame.of(FrameKind.ECHO_REPLY, id, reply);
                }
                case RENDER: {
                    RenderRequest r;
                    try {
                        r = Messages.renderRequest(f);
                    } catch (IllegalArgumentException e) {
                        return error(id, ErrorCode.BAD_REQUEST, KIND_BAD_REQUEST, e.getMessage());
                    }
                    long t0 = System.nanoTime();
                    ControlTarget.Rendered rendered = target.render(r);
                    RenderResult result = rendered.result();
                    served.incrementAndGet();
                    ControlTarget.ServedBy by = rendered.servedBy();
                    log.accept("render " + r.type().wireName() + " " + r.document().length + " bytes -> "
                            + result.width() + "x" + result.height() + " png " + result.outputBytes() + " bytes in "
                            + (System.nanoTime() - t0) / 1_000_000 + " ms"
                            + (by == null ? "" : " in " + by.mode() + " sandbox " + by.sandbox()));
                    Frame reply = Messages.toFrame(result, id);
                    if (by != null) {
                        ObjectNode s = reply.header().putObject("servedBy");
                        s.put("sandbox", by.sandbox());
                        s.put("mode", by.mode());
                        s.put("earlierDocuments", by.earlierDocuments());
                        s.put("restored", by.restored());
                    }
                    return reply;
                }
                case GOODBYE: {
                    log.accept("goodbye: stopping the sandbox");
                    goodbyeReceived.complete(null);
                    target.stop();
                    served.incrementAndGet();
                    ObjectNode h = JsonNodeFactory.instance.objectNode();
                    h.put("stopped", true);
                    return Frame.of(FrameKind.GOODBYE, id, h);
                }
                default:
                    return error(id, ErrorCode.BAD_REQUEST, KIND_BAD_REQUEST, "the control socket does not accept "
                            + f.kind() + " frames (it takes ECHO, RENDER, GOODBYE, HELLO)");
            }
        } catch (RenderFailedException e) {
            log.accept(f.kind().name().toLowerCase(java.util.Locale.ROOT) + " failed: " + e.getMessage());
            return error(id, e.code(), KIND_RENDER_FAILED, workerMessage(e));
        } catch (SandboxLostException e) {
            if (e.reason() == SandboxLostException.Reason.DEADLINE_EXCEEDED) {
                log.accept("request timed out: " + e.getMessage());
                return error(id, ErrorCode.TIMEOUT, KIND_TIMEOUT, e.getMessage());
            }
            log.accept("sandbox crashed: " + e.getMessage());
            return error(id, ErrorCode.INTERNAL, KIND_CRASHED, e.getMessage());
        } catch (IllegalArgumentException e) {
            return error(id, ErrorCode.BAD_REQUEST, KIND_BAD_REQUEST, e.getMessage());
        } catch (RuntimeException e) {
            log.accept("request failed: " + e);
            return error(id, ErrorCode.INTERNAL, KIND_INTERNAL, e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    /** The worker's own message: RenderFailedException prefixes it with "CODE: ". */
    private static String workerMessage(RenderFailedException e) {
        String m = e.getMessage() == null ? "" : e.getMessage();
        String prefix = e.code().name() + ": ";
        return m.startsWith(prefix) ? m.substring(prefix.length()) : m;
    }

    static Frame error(long requestId, ErrorCode code, String kind, String message) {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("code", code.name());
        h.put("message", message == null ? "" : message);
        h.put("kind", kind);
        return Frame.of(FrameKind.ERROR, requestId, h);
    }

    /** Stops accepting, closes every connection and deletes the socket file. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (SocketChannel c : connections) {
            try {
                c.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        acceptor.interrupt();
        try {
            Files.deleteIfExists(socket);
        } catch (IOException ignored) {
            // its directory goes with the sandbox
        }
    }
}
