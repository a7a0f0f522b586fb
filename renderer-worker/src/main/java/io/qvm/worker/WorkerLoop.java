package io.qvm.worker;

import io.qvm.protocol.Messages;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameCorruptException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.FrameTruncatedException;
import io.qvm.protocol.FrameWriter;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import io.qvm.protocol.WorkerStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The worker's protocol loop over one pair of blocking streams (stdin/stdout in the guest).
 *
 * <pre>
 *   start ──warm-up──► wait for HELLO ──READY──► serve ──GOODBYE / EOF──► exit 0
 *                       (anything else is         │  ECHO   → ECHO_REPLY (same body)
 *                        skipped and counted)     │  RENDER → RENDER_RESULT | ERROR
 *                                                 │  STATUS → STATUS_REPLY | ERROR
 *                                                 │  HELLO  → READY again (new limits)
 *                                                 └  other  → ERROR BAD_REQUEST
 * </pre>
 *
 * <p>Requests are handled one at a time, in order; each gets exactly one answer with its request
 * id. After READY the reader accepts bodies up to the HELLO's {@code maxRequestBytes} (a larger
 * request is skipped unread and answered {@code TOO_LARGE}) and the writer refuses answers above
 * {@code maxResponseBytes} (they are replaced by {@code TOO_LARGE}). A frame whose prefix checks
 * out but whose header is unusable is answered {@code BAD_REQUEST}. The warm-up runs before HELLO
 * is read, so a VM snapshot taken while the worker waits for HELLO holds a warm JVM; beside the
 * renderer's, a {@link ProtocolWarmUp} loads and initializes the frame path (Jackson included).
 *
 * <p>A render that cannot be stopped after its deadline is answered TIMEOUT and the loop returns
 * {@link RenderWatchdog#STUCK_STATUS}: the host replaces the sandbox.
 *
 * <p>A new HELLO after READY starts a new session on the same process (a virtio-serial port keeps
 * no connection state, so a host that reconnects simply says HELLO again). Before every READY the
 * worker drains its {@code /dev/urandom} ({@link Entropy#drain}): a host that restored the VM from
 * a snapshot template says HELLO again, and the drain makes the clone's randomness its own.
 *
 * <p>STATUS reports the worker itself ({@link WorkerStatus}): its clock, fresh bytes of
 * {@code /dev/urandom}, the ECHO, RENDER and STATUS requests it answered before (across sessions;
 * frames refused before their kind was handled are not counted) and the HELLOs it accepted.
 */
public final class WorkerLoop {

    /** What READY always advertises. */
    public static final String CAPABILITY_ECHO = "echo";

    /** Before HELLO: a HELLO has no body, so nothing larger than a header is ever read. */
    private static final FrameLimits BEFORE_HELLO = new FrameLimits(FrameLimits.DEFAULT_HEADER_BYTES, 0);

    private final InputStream in;
    private final OutputStream out;
    private final RenderHandler renderer;
    private final Log log;
    private final String version;
    private final Entropy entropy;
    private final boolean warmUpProtocol;

    private FrameReader reader;
    private FrameWriter writer;
    private long requestsServed;
    private long sessions;

    /**
     * The loop of a worker process: {@code /dev/urandom}, and the {@link ProtocolWarmUp} beside the
     * renderer's warm-up.
     *
     * @param in the request stream; buffered by the caller (frames are read in 28-byte prefixes)
     * @param out the answer stream; only frames are ever written to it
     */
    public WorkerLoop(InputStream in, OutputStream out, RenderHandler renderer, Log log, String version) {
        this(in, out, renderer, log, version, Entropy.urandom(), true);
    }

    /**
     * With another entropy device than {@code /dev/urandom}, and the protocol warm-up on or off
     * (tests: a fuzz input need not pay for it).
     */
    WorkerLoop(InputStream in, OutputStream out, RenderHandler renderer, Log log, String version, Entropy entropy,
            boolean warmUpProtocol) {
        this.warmUpProtocol = warmUpProtocol;
        this.in = Objects.requireNonNull(in, "in");
        this.out = Objects.requireNonNull(out, "out");
        this.renderer = Objects.requireNonNull(renderer, "renderer");
        this.log = Objects.requireNonNull(log, "log");
        this.version = Objects.requireNonNull(version, "version");
        this.entropy = Objects.requireNonNull(entropy, "entropy");
    }

    /**
     * Runs until GOODBYE or the end of the input.
     *
     * @return the process exit status: 0, or {@link RenderWatchdog#STUCK_STATUS}
     * @throws IOException if the answer stream fails (the host is gone)
     */
    public int run() throws IOException {
        long t0 = System.nanoTime();
        Thread protocol = warmUpProtocol();
        renderer.warmUp();
        if (protocol != null) {
            try {
                protocol.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        log.info("warm in " + (System.nanoTime() - t0) / 1_000_000 + " ms, waiting for HELLO");
        reader = new FrameReader(in, BEFORE_HELLO);
        writer = new FrameWriter(out, BEFORE_HELLO);
        Session session = awaitHello();
        if (session == null) {
            log.info("input ended before HELLO");
            return 0;
        }
        return serve(session);
    }

    /**
     * Starts {@link ProtocolWarmUp} on a thread of its own, beside the renderer's warm-up; null
     * when this loop does not warm it up or {@code -Dqvm.warmup=false} skips the warm-up. A
     * failure is one log line: the loop works without it.
     */
    private Thread warmUpProtocol() {
        if (!warmUpProtocol || DocumentRenderHandler.warmUpSkipped()) {
            return null;
        }
        Thread t = new Thread(() -> {
            long t0 = System.nanoTime();
            try {
                int frames = ProtocolWarmUp.run().size();
                log.info("protocol warm-up: " + frames + " frames in " + (System.nanoTime() - t0) / 1_000_000 + " ms");
            } catch (IOException | RuntimeException e) {
                log.info("protocol warm-up failed: " + e.getClass().getSimpleName());
            }
        }, "warm-up-protocol");
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The limits of one HELLO/READY session. */
    private record Session(Limits limits, FrameLimits requestLimits, FrameLimits responseLimits) {
    }

    private Session awaitHello() throws IOException {
        long skippedFrames = 0;
        while (true) {
            Frame f;
            try {
                f = reader.read();
            } catch (FrameTooLargeException | FrameCorruptException e) {
                skippedFrames++;
                continue;
            } catch (FrameTruncatedException e) {
                return null;
            }
            if (f == null) {
                return null;
            }
            if (f.kind() != FrameKind.HELLO) {
                skippedFrames++;
                continue;
            }
            Session s = accept(f);
            if (s != null) {
                long bytes = reader.discardedBytes();
                if (skippedFrames > 0 || bytes > 0) {
                    log.info("skipped " + skippedFrames + " frames and " + bytes + " stray bytes before HELLO");
                }
                return s;
            }
        }
    }

    /** Answers a HELLO with READY and switches the reader and writer to its limits; null if refused. */
    private Session accept(Frame helloFrame) throws IOException {
        Hello hello;
        Session s;
        try {
            hello = Messages.hello(helloFrame);
            if (hello.protocol() != FrameCodec.VERSION) {
                refuseHello(helloFrame, "protocol " + hello.protocol() + " is not supported; this worker speaks "
                        + FrameCodec.VERSION);
                return null;
            }
            Limits l = hello.limits();
            s = new Session(l, FrameLimits.ofBody(l.maxRequestBytes()), FrameLimits.ofBody(l.maxResponseBytes()));
        } catch (IllegalArgumentException e) {
            refuseHello(helloFrame, "malformed HELLO");
            return null;
        }
        List<String> caps = new ArrayList<>();
        caps.add(CAPABILITY_ECHO);
        caps.addAll(renderer.capabilities());
        entropy.drain(log);
        sessions++;
        writer = new FrameWriter(out, s.responseLimits());
        writer.write(Messages.toFrame(new Ready(hello.nonce(), version, caps)));
        // The reader holds no bytes between frames, so a new one can take over the same stream.
        reader = new FrameReader(in, s.requestLimits());
        Limits l = s.limits();
        log.info("READY version=" + version + " maxRequestBytes=" + l.maxRequestBytes() + " maxResponseBytes="
                + l.maxResponseBytes() + " maxPixels=" + l.maxPixels() + " maxSide=" + l.maxSide() + " maxPages="
                + l.maxPages() + " requestTimeoutMillis=" + l.requestTimeoutMillis());
        return s;
    }

    private void refuseHello(Frame helloFrame, String why) throws IOException {
        log.info("refused HELLO: " + why);
        writer.write(Messages.toFrame(new ErrorReply(helloFrame.requestId(), ErrorCode.BAD_REQUEST, why)));
    }

    private int serve(Session session) throws IOException {
        long served = 0;
        while (true) {
            Frame f;
            try {
                f = reader.read();
            } catch (FrameTooLargeException e) {
                send(error(e.requestId(), ErrorCode.TOO_LARGE, e.kind() + " request of " + e.declaredBytes()
                        + " bytes is above the limit of " + e.limitBytes() + " bytes"));
                continue;
            } catch (FrameCorruptException e) {
                send(error(e.requestId(), ErrorCode.BAD_REQUEST, "unreadable frame header"));
                continue;
            } catch (FrameTruncatedException e) {
                log.info("input ended inside a frame after " + served + " requests");
                return 0;
            }
            if (f == null) {
                log.info("input ended after " + served + " requests; exiting");
                return 0;
            }
            served++;
            switch (f.kind()) {
                case ECHO -> {
                    send(echo(f, session.limits()));
                    requestsServed++;
                }
                case STATUS -> {
                    send(status(f.requestId()));
                    requestsServed++;
                }
                case RENDER -> {
                    send(renderer.handle(f, session.limits()));
                    requestsServed++;
                    if (!renderer.healthy()) {
                        log.info("a render could not be stopped after its deadline; exiting with status "
                                + RenderWatchdog.STUCK_STATUS);
                        return RenderWatchdog.STUCK_STATUS;
                    }
                }
                case GOODBYE -> {
                    send(Frame.of(FrameKind.GOODBYE, f.requestId(), (byte[]) null));
                    log.info("GOODBYE after " + served + " requests; exiting");
                    return 0;
                }
                case HELLO -> {
                    Session next = accept(f);
                    if (next != null) {
                        session = next;
                    }
                }
                default -> send(error(f.requestId(), ErrorCode.BAD_REQUEST, f.kind() + " is not a request"));
            }
        }
    }

    /** The STATUS_REPLY to request {@code id}, or INTERNAL if {@code /dev/urandom} cannot be read. */
    private Frame status(long id) {
        byte[] random;
        try {
            random = entropy.fresh(WorkerStatus.RANDOM_BYTES);
        } catch (IOException e) {
            return error(id, ErrorCode.INTERNAL, "cannot read /dev/urandom (" + e.getClass().getSimpleName() + ")");
        }
        return Messages.toFrame(WorkerStatus.of(System.currentTimeMillis(), random, requestsServed, sessions), id);
    }

    /**
     * The ECHO answer: the request's body, or — when the header asks {@code {"replyBytes": n}} —
     * n zero bytes instead (the request body is dropped), so the host can time each direction of
     * the transport on its own. n is checked against the session's response limit before
     * anything is allocated.
     */
    static Frame echo(Frame f, Limits limits) {
        com.fasterxml.jackson.databind.JsonNode n = f.header().get("replyBytes");
        if (n == null) {
            return Frame.of(FrameKind.ECHO_REPLY, f.requestId(), f.body());
        }
        if (!n.canConvertToInt() || n.asInt() < 0) {
            return error(f.requestId(), ErrorCode.BAD_REQUEST, "replyBytes must be a non-negative integer");
        }
        if (n.asInt() > limits.maxResponseBytes()) {
            return error(f.requestId(), ErrorCode.TOO_LARGE, "replyBytes " + n.asInt() + " is above the limit of "
                    + limits.maxResponseBytes() + " bytes");
        }
        return Frame.of(FrameKind.ECHO_REPLY, f.requestId(), new byte[n.asInt()]);
    }

    /** Writes an answer, or TOO_LARGE in its place if it is above the host's response limit. */
    private void send(Frame answer) throws IOException {
        try {
            writer.write(answer);
        } catch (FrameTooLargeException e) {
            writer.write(error(answer.requestId(), ErrorCode.TOO_LARGE, "response of " + e.declaredBytes()
                    + " bytes is above the limit of " + e.limitBytes() + " bytes"));
        }
    }

    private static Frame error(long id, ErrorCode code, String message) {
        return Messages.toFrame(new ErrorReply(id, code, message));
    }
}
