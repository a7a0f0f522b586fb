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
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one {@link SandboxTransport} behind every kind of connection: the handshake gate, the id →
 * future map and the close handling. A {@link Link} moves the frames; it calls back
 * {@link #onFrame}, {@link #onRejected} and {@link #onLinkClosed} from its reader thread (or
 * event loop), one call at a time.
 *
 * <p>Internal: construct it through the transports' factories.
 */
public final class FrameDispatcher implements SandboxTransport {

    /** The frame mover under a dispatcher: a Netty channel or a pair of blocking streams. */
    public interface Link {
        /** Writes a whole frame; the future completes once written, or fails with the reason. */
        CompletableFuture<Void> send(Frame frame);

        /** Bytes the link's decoder skipped (stale + rejected). */
        long discardedBytes();

        /** Bytes the link's decoder holds for a frame still arriving (0 between frames). */
        default long bufferedBytes() {
            return 0;
        }

        /** Releases the connection and every thread it owns; idempotent, callable from any thread. */
        void close();
    }

    private final String kind;
    private final Limits limits;
    private final FrameLimits inbound;
    private final FrameLimits outbound;
    private volatile Link link;

    private final Map<Long, CompletableFuture<Frame>> pending = new ConcurrentHashMap<>();
    private final Map<Long, FrameKind> pendingKinds = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);
    private final AtomicLong discardedFrames = new AtomicLong();
    private final Map<FrameKind, Long> discardedKinds = new EnumMap<>(FrameKind.class);
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final AtomicBoolean closing = new AtomicBoolean();

    private final Object gate = new Object();
    private String expectedNonce;               // guarded by gate
    private CompletableFuture<Ready> awaitedReady; // guarded by gate
    private volatile boolean ready;
    private volatile TransportException closedBy;

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
            throw TransportException.handshakeTimeout(kind, deadline, discardedBytes(), discardedFrames(), discardedSummary());
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
        pendingKinds.put(id, request.kind());
        pending.put(id, reply);
        reply.whenComplete((f, err) -> forget(id)); // also when the caller cancels or times out
        gone = closedBy;
        if (gone != null) { // lost while registering: the close sweep may have missed this one
            reply.completeExceptionally(gone);
            return reply;
        }
        link.send(frame).whenComplete((v, err) -> {
            if (err != null) {
                reply.completeExceptionally(writeFailed(request.kind() + " request " + id, err));
            }
        });
        return reply;
    }

    private void forget(long id) {
        pending.remove(id);
        pendingKinds.remove(id);
    }

    // ---------------------------------------------------------------- inbound (link thread)

    /** A well-formed frame arrived. */
    public void onFrame(Frame frame) {
        if (!ready) {
            if (!acceptReady(frame)) {
                discard(frame.kind());
            }
            return;
        }
        CompletableFuture<Frame> reply = frame.requestId() == Hello.REQUEST_ID ? null : pending.get(frame.requestId());
        FrameKind sent = pendingKinds.get(frame.requestId());
        if (reply == null || sent == null) {
            discard(frame.kind());
            return;
        }
        if (frame.kind() == FrameKind.ERROR) {
            reply.completeExceptionally(new WorkerErrorException(Messages.errorReply(frame)));
        } else if (frame.kind() == sent.replyKind()) {
            reply.complete(frame);
        } else {
            reply.completeExceptionally(new FrameCorruptException(frame.requestId(), sent + " request "
                    + frame.requestId() + " was answered with " + frame.kind() + " (expected " + sent.replyKind()
                    + " or ERROR): the worker does not speak this protocol"));
        }
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

    /** A frame with a sound prefix could not be accepted; fail the request it answers, if any. */
    public void onRejected(long requestId, FrameException reason) {
        CompletableFuture<Frame> reply = ready && requestId != Hello.REQUEST_ID ? pending.get(requestId) : null;
        if (reply == null) {
            discard(null);
            return;
        }
        reply.completeExceptionally(reason);
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
        closedBy = reason;
        CompletableFuture<Ready> answer;
        synchronized (gate) {
            answer = awaitedReady;
        }
        if (answer != null) {
            answer.completeExceptionally(reason);
        }
        for (CompletableFuture<Frame> f : new ArrayList<>(pending.values())) {
            f.completeExceptionally(reason);
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

    @Override
    public long discardedBytes() {
        Link l = link;
        return l == null ? 0 : l.discardedBytes();
    }

    @Override
    public long discardedFrames() {
        return discardedFrames.get();
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
        return pending.size();
    }

    private void discard(FrameKind k) {
        discardedFrames.incrementAndGet();
        if (k != null) {
            synchronized (discardedKinds) {
                discardedKinds.merge(k, 1L, Long::sum);
            }
        }
    }

    private String discardedSummary() {
        List<String> parts = new ArrayList<>();
        synchronized (discardedKinds) {
            discardedKinds.forEach((k, n) -> parts.add(n + " " + k));
        }
        return String.join(", ", parts);
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
