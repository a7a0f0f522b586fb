package io.qvm.transport.internal;

import java.io.IOException;
import io.qvm.protocol.Messages;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameCorruptException;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.transport.TransportException;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.WorkerErrorException;
import java.io.EOFException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one {@link SandboxTransport} behind every kind of connection: the handshake gate, the id →
 * request map, protocol violations and the close handling. A {@link Link} moves the frames; it
 * calls back {@link #onFrame}, {@link #onRejected}, {@link #onStale} and {@link #onLinkClosed}
 * from its reader thread (or event loop), one call at a time, in stream order.
 *
 * <p><b>Before READY</b> everything that arrives is discarded (the session's resynchronisation,
 * adr/0003) and tallied for the handshake's timeout message only. <b>After READY</b> the worker
 * may send nothing but one answer per request, under that request's id; anything else is a
 * protocol violation, handled the moment it is decoded: {@code violate} drops the connection
 * with {@link TransportException.Reason#PROTOCOL_VIOLATION}, which fails every pending request at
 * once, completes {@link #closed()} exceptionally and fails every later request before writing.
 * The one exception is the late answer to a request the caller abandoned (cancelled, or timed out
 * with {@code orTimeout}): the worker was slow, not hostile, so it is dropped — once per id, and
 * only if it is of that request's reply kind or ERROR.
 *
 * <p>Internal: construct it through the transports' factories.
 */
public final class FrameDispatcher implements SandboxTransport {

    /** The frame mover under a dispatcher: a Netty channel or a pair of blocking streams. */
    public interface Link {
        /** Writes a whole frame; the future completes once written, or fails with the reason. */
        CompletableFuture<Void> send(Frame frame);

        /** Bytes the link's decoder holds for a frame still arriving (0 between frames). */
        default long bufferedBytes() {
            return 0;
        }

        /** Releases the connection and every thread it owns; idempotent, callable from any thread. */
        void close();
    }

    /**
     * How many abandoned request ids are remembered for their late answers; beyond it the oldest
     * is forgotten (its answer, if it ever comes, is then a violation). A caller that abandons
     * this many requests to one worker has stopped talking to it anyway.
     */
    static final int ABANDONED_IDS = 1024;

    /** A request waiting for its answer. */
    private record Pending(FrameKind sent, CompletableFuture<Frame> reply) {
    }

    private final String kind;
    private final Limits limits;
    private final FrameLimits inbound;
    private final FrameLimits outbound;
    private volatile Link link;

    private final Object ids = new Object();
    private final Map<Long, Pending> pending = new HashMap<>(); // guarded by ids
    private final Map<Long, FrameKind> abandoned = new LinkedHashMap<>(16, 0.75f, false) { // guarded by ids
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, FrameKind> eldest) {
            return size() > ABANDONED_IDS;
        }
    };
    private final AtomicLong nextId = new AtomicLong(1);
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final AtomicBoolean closing = new AtomicBoolean();

    private final Object gate = new Object();
    private String expectedNonce;               // guarded by gate
    private CompletableFuture<Ready> awaitedReady; // guarded by gate
    private volatile boolean ready;
    private volatile TransportException closedBy;

    /** What arrived before READY, for the handshake's timeout message only (guarded by itself). */
    private final Map<String, Long> beforeReady = new LinkedHashMap<>();
    private volatile long staleBeforeReady;

    public FrameDispatcher(String kind, Limits limits) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.limits = Objects.requireNonNull(limits, "limits");
        this.inbound = inboundLimits(limits);
        this.outbound = outboundLimits(limits);
    }

    /** What the host accepts from the worker: the max response body, the default header limit. */
    public static FrameLimits inboundLimits(Limits limits) {
        return FrameLimits.ofBody(limits.maxResponseBytes());
    }

    /** What the worker accepts from the host: the max request body, the default header limit. */
    public static FrameLimits outboundLimits(Limits limits) {
        return FrameLimits.ofBody(limits.maxRequestBytes());
    }

    /** Connects the link; call once, before the handshake. */
    public void attach(Link link) {
        Objects.requireNonNull(link, "link");
        this.link = link;
        if (closing.get()) {
            link.close();
        }
    }

    @Override
    public String kind() {
        return kind;
    }

    // ---------------------------------------------------------------- handshake

    @Override
    public Ready handshake(Hello hello, Duration deadline) throws TransportException, InterruptedException {
        Objects.requireNonNull(hello, "hello");
        Objects.requireNonNull(deadline, "deadline");
        if (!hello.limits().equals(limits)) {
            throw new IllegalArgumentException("the HELLO's limits " + hello.limits()
                    + " differ from the limits this transport was opened with " + limits
                    + "; pass the same Limits to both");
        }
        CompletableFuture<Ready> answer = new CompletableFuture<>();
        synchronized (gate) {
            if (ready) {
                throw new IllegalStateException("the handshake already succeeded on this " + kind + " transport");
            }
            expectedNonce = hello.nonce();
            awaitedReady = answer;
        }
        TransportException gone = closedBy;
        if (gone != null) {
            throw gone;
        }
        link.send(Messages.toFrame(hello)).whenComplete((v, err) -> {
            if (err != null) {
                answer.completeExceptionally(writeFailed("HELLO", err));
            }
        });
        try {
            return answer.get(Math.max(0, deadline.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw handshakeTimeout(deadline);
        } catch (ExecutionException e) {
            throw asTransportException(e.getCause());
        } finally {
            synchronized (gate) {
                if (awaitedReady == answer) {
                    awaitedReady = null;
                    if (!ready) {
                        expectedNonce = null;
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- requests

    @Override
    public CompletableFuture<Frame> request(Frame request) {
        Objects.requireNonNull(request, "request");
        FrameKind replyKind = request.kind().replyKind();
        if (replyKind == null) {
            throw new IllegalArgumentException(request.kind() + " is not a request kind; requests are ECHO, RENDER"
                    + " and GOODBYE (HELLO goes through handshake())");
        }
        TransportException gone = closedBy;
        if (gone != null) {
            return CompletableFuture.failedFuture(gone);
        }
        if (!ready) {
            throw new IllegalStateException("request before a successful handshake on this " + kind + " transport");
        }
        long id = nextId.getAndIncrement();
        Frame frame = new Frame(request.kind(), id, request.header(), request.body());
        try {
            // The encoder checks the same limits, after this returns: checked here, a frame the
            // host cannot send (header or body above the peer's limits) fails at once, before
            // anything is written, and never looks like something the peer did.
            FrameCodec.encodePrefixAndHeader(frame, outbound);
        } catch (FrameTooLargeException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<Frame> reply = new CompletableFuture<>();
        synchronized (ids) {
            gone = closedBy; // set before the close sweep takes this lock: registered here, swept there
            if (gone != null) {
                return CompletableFuture.failedFuture(gone);
            }
            pending.put(id, new Pending(request.kind(), reply));
        }
        reply.whenComplete((f, err) -> abandon(id)); // a no-op unless the caller gave up (cancel, orTimeout)
        if (reply.isDone()) {
            return reply; // failed by a violation or a close since it was registered: nothing is written
        }
        link.send(frame).whenComplete((v, err) -> {
            if (err != null) {
                reply.completeExceptionally(writeFailed(request.kind() + " request " + id, err));
            }
        });
        return reply;
    }

    /**
     * The request's future completed: if it is still registered, nothing from the worker completed
     * it (the caller cancelled it or timed it out), so its late answer is expected and harmless.
     */
    private void abandon(long id) {
        synchronized (ids) {
            Pending p = pending.remove(id);
            if (p != null && closedBy == null) {
                abandoned.put(id, p.sent());
            }
        }
    }

    /** Takes the request that {@code frame} answers out of the map; null if none waits for it. */
    private Pending claim(long id) {
        synchronized (ids) {
            return pending.remove(id);
        }
    }

    // ---------------------------------------------------------------- inbound (link thread)

    /** A well-formed frame arrived. */
    public void onFrame(Frame frame) {
        if (closing.get()) {
            return; // dropped (or being dropped): nothing more is delivered
        }
        if (!ready) {
            if (!acceptReady(frame)) {
                tallyBeforeReady(frame.kind().toString());
            }
            return;
        }
        long id = frame.requestId();
        Pending p = id == Hello.REQUEST_ID ? null : claim(id);
        if (p == null) {
            unclaimed(frame);
            return;
        }
        if (frame.kind() == FrameKind.ERROR) {
            p.reply().completeExceptionally(new WorkerErrorException(Messages.errorReply(frame)));
        } else if (frame.kind() == p.sent().replyKind()) {
            p.reply().complete(frame);
        } else {
            p.reply().completeExceptionally(violate(p.sent() + " request " + id + " was answered with "
                    + frame.kind() + " (expected " + p.sent().replyKind() + " or ERROR)", new FrameCorruptException(id,
                    p.sent() + " request " + id + " was answered with " + frame.kind()
                    + ": the worker does not speak this protocol")));
        }
    }

    /** A frame no request waits for: the late answer to an abandoned request, or a violation. */
    private void unclaimed(Frame frame) {
        long id = frame.requestId();
        FrameKind sent;
        synchronized (ids) {
            sent = abandoned.remove(id);
        }
        if (sent != null && (frame.kind() == sent.replyKind() || frame.kind() == FrameKind.ERROR)) {
            return; // the caller gave up on it first: the worker was slow, not hostile
        }
        String which = id == Hello.REQUEST_ID ? "id 0, the handshake's"
                : id >= nextId.get() ? "no request with that id was sent"
                : sent != null ? "the abandoned " + sent + " request's, of the wrong kind"
                : "that request was already answered";
        violate("a " + frame.kind() + " frame for request " + id + ", which no request waits for (" + which + ")",
                null);
    }

    private boolean acceptReady(Frame frame) {
        if (frame.kind() != FrameKind.READY) {
            return false;
        }
        CompletableFuture<Ready> answer;
        Ready r;
        synchronized (gate) {
            if (expectedNonce == null || awaitedReady == null) {
                return false;
            }
            try {
                r = Messages.ready(frame);
            } catch (IllegalArgumentException e) {
                return false;
            }
            if (!expectedNonce.equals(r.nonce())) {
                return false;
            }
            ready = true;
            answer = awaitedReady;
        }
        answer.complete(r);
        return true;
    }

    /**
     * A frame with a sound prefix could not be accepted (too large, unusable header, kind or
     * version): before READY it is skipped; after it, a violation.
     */
    public void onRejected(long requestId, FrameException reason) {
        if (closing.get()) {
            return;
        }
        if (!ready) {
            tallyBeforeReady("rejected");
            return;
        }
        violate("a frame for request " + requestId + " the host refused: " + reason.getMessage(), reason);
    }

    /** The decoder skipped {@code bytes} that are no frame: before READY stale, after it a violation. */
    public void onStale(long bytes) {
        if (closing.get()) {
            return;
        }
        if (!ready) {
            staleBeforeReady += bytes; // the link thread is the only writer
            return;
        }
        violate(bytes + " bytes that are not frames, between frames", null);
    }

    /**
     * The worker broke the protocol after READY: drops the connection with
     * {@link TransportException.Reason#PROTOCOL_VIOLATION}, which fails every pending request at
     * once and every later one before it is written. Returns what they fail with (this
     * violation, or the close that came first).
     */
    private TransportException violate(String what, Throwable cause) {
        shutdown(TransportException.protocolViolation(kind, what, cause), false);
        return closedBy;
    }

    /**
     * The connection ended; {@code cause} says how (null: the peer closed it cleanly). A
     * {@link TransportException} cause (the link dropped the connection for a typed reason, e.g.
     * {@link TransportException.Reason#FRAME_STALLED}) is what every pending request fails with.
     */
    public void onLinkClosed(Throwable cause) {
        if (cause instanceof TransportException typed) {
            shutdown(typed, false);
            return;
        }
        Throwable why = cause != null ? cause : new EOFException("the peer closed the connection");
        shutdown(new TransportException(TransportException.Reason.CLOSED, "the " + kind + " connection to the worker was lost: " + why, why), false);
    }

    // ---------------------------------------------------------------- closing

    @Override
    public void close() {
        shutdown(new TransportException(TransportException.Reason.CLOSED, "the " + kind + " transport was closed by the host", null), true);
    }

    private void shutdown(TransportException reason, boolean byHost) {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        List<Pending> failing;
        synchronized (ids) {
            closedBy = reason;
            failing = new ArrayList<>(pending.values());
            pending.clear();
            abandoned.clear();
        }
        CompletableFuture<Ready> answer;
        synchronized (gate) {
            answer = awaitedReady;
        }
        if (answer != null) {
            answer.completeExceptionally(reason);
        }
        for (Pending p : failing) {
            p.reply().completeExceptionally(reason);
        }
        Link l = link;
        try {
            if (l != null) {
                l.close();
            }
        } finally {
            if (byHost) {
                closed.complete(null);
            } else {
                closed.completeExceptionally(reason);
            }
        }
    }

    @Override
    public CompletableFuture<Void> closed() {
        return closed;
    }

    /**
     * Bytes held for a frame from the worker that is still arriving (diagnostics and tests): what
     * a peer that declared a large frame and stopped costs the host.
     */
    public long bufferedBytes() {
        Link l = link;
        return l == null ? 0 : l.bufferedBytes();
    }

    /** How many requests wait for a reply (diagnostics and tests). */
    public int pendingRequests() {
        synchronized (ids) {
            return pending.size();
        }
    }

    private void tallyBeforeReady(String what) {
        synchronized (beforeReady) {
            beforeReady.merge(what, 1L, Long::sum);
        }
    }

    /** The handshake's timeout, with what arrived instead of its READY. */
    private TransportException handshakeTimeout(Duration deadline) {
        List<String> parts = new ArrayList<>();
        long frames = 0;
        synchronized (beforeReady) {
            for (Map.Entry<String, Long> e : beforeReady.entrySet()) {
                parts.add(e.getValue() + " " + e.getKey());
                frames += e.getValue();
            }
        }
        return TransportException.handshakeTimeout(kind, deadline, staleBeforeReady, frames, String.join(", ", parts));
    }

    /** A frame the encoder refused fails its request with that {@link FrameException} (e.g. too large). */
    private IOException writeFailed(String what, Throwable err) {
        Throwable cause = unwrap(err);
        if (cause instanceof TransportException || cause instanceof FrameException) {
            return (IOException) cause;
        }
        TransportException gone = closedBy;
        return gone != null ? gone
                : new TransportException(TransportException.Reason.CLOSED, "writing the " + what + " on the " + kind
                        + " transport failed: " + cause, cause);
    }

    private TransportException asTransportException(Throwable err) {
        Throwable cause = unwrap(err);
        if (cause instanceof TransportException te) {
            return te;
        }
        return new TransportException(TransportException.Reason.CLOSED, "the " + kind + " transport failed: " + cause,
                cause);
    }

    /** Strips CompletionException / Netty's EncoderException wrappers down to our typed cause. */
    static Throwable unwrap(Throwable err) {
        Throwable t = err;
        while ((t instanceof CompletionException || t instanceof ExecutionException
                || t.getClass().getName().equals("io.netty.handler.codec.EncoderException")) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
