package io.qvm.transport.testing;

import io.qvm.protocol.Messages;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.FrameWriter;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Ready;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.WorkerStatus;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A worker that speaks the real protocol — {@link FrameReader}/{@link FrameWriter} over a real
 * AF_UNIX or loopback TCP server socket — with scripted behaviour and faults described as data.
 *
 * <pre>{@code
 * try (FakeWorker w = FakeWorker.builder()
 *         .onConnect(FakeWorker.garbage(100, 1))            // an earlier session's tail
 *         .beforeReady(FakeWorker.staleReady("not-yours"))  // a READY for someone else
 *         .unix(dir.resolve("w.sock"))) {
 *     w.enqueue(Effect.stall(), Effect.closeConnection());  // then: echo as usual
 *     ... SerialTransport.connect(w.socketPath(), ...) ...
 * }
 * }</pre>
 *
 * <p>Requests are served one at a time per connection, in arrival order, each by the next queued
 * {@link Effect} or, when the queue is empty, the default: ECHO → ECHO_REPLY with the same body,
 * GOODBYE → GOODBYE then close, STATUS → STATUS_REPLY (the host's clock, fresh random bytes,
 * the requests received so far), RENDER → ERROR UNSUPPORTED (or the RENDER_RESULT given to
 * {@link Builder#renders}).
 */
public final class FakeWorker implements AutoCloseable {

    /** What the worker does with one request. */
    public sealed interface Effect {
        /** Answer as usual. */
        static Effect normal() {
            return new Normal();
        }

        /** Close the connection without answering (the VM died mid-request). */
        static Effect closeConnection() {
            return new CloseConnection();
        }

        /** Never answer this request; keep serving the next ones. */
        static Effect stall() {
            return new Stall();
        }

        /** Answer with the right kind but a zero-filled body of {@code bytes} (e.g. above the host's limit). */
        static Effect replyWithBody(int bytes) {
            return new ReplyWithBody(bytes);
        }

        /** Answer with an ERROR frame. */
        static Effect error(ErrorCode code, String message) {
            return new Error(code, message);
        }

        /** Hold the normal answer back and send it right after the next request's answer. */
        static Effect answerAfterNext() {
            return new AnswerAfterNext();
        }

        /** Answer as usual but under another request's id ({@code delta} added to the right one). */
        static Effect wrongId(long delta) {
            return new WrongId(delta);
        }

        /** Answer under the right id with a frame of {@code kind} and an empty body (the wrong kind). */
        static Effect wrongKind(FrameKind kind) {
            return new WrongKind(kind);
        }

        /** Answer as usual, then send the same answer again (a second answer to one request). */
        static Effect answerTwice() {
            return new AnswerTwice();
        }

        /** Write these raw bytes, then answer normally. */
        static Effect rawBytesThenNormal(byte[] bytes) {
            return new RawBytesThenNormal(bytes.clone());
        }

        /**
         * Begin the answer and never finish it: a sound prefix of the reply kind that declares a
         * body of {@code declaredBytes}, then only the first {@code sentBytes} of it (zeros). The
         * connection stays open and later requests are read (and answered after the half frame,
         * which a reader takes for more body).
         */
        static Effect partialReply(int declaredBytes, int sentBytes) {
            if (sentBytes < 0 || sentBytes > declaredBytes) {
                throw new IllegalArgumentException("sentBytes must be in 0.." + declaredBytes);
            }
            return new PartialReply(declaredBytes, sentBytes);
        }
    }

    record Normal() implements Effect {
    }

    record CloseConnection() implements Effect {
    }

    record Stall() implements Effect {
    }

    record ReplyWithBody(int bytes) implements Effect {
    }

    record Error(ErrorCode code, String message) implements Effect {
    }

    record AnswerAfterNext() implements Effect {
    }

    record AnswerTwice() implements Effect {
    }

    record RawBytesThenNormal(byte[] bytes) implements Effect {
    }

    record WrongId(long delta) implements Effect {
    }

    record WrongKind(FrameKind kind) implements Effect {
    }

    record PartialReply(int declaredBytes, int sentBytes) implements Effect {
    }

    /** Builds a worker; {@link #unix} or {@link #tcp} starts it. */
    public static final class Builder {
        private final List<byte[]> onConnect = new ArrayList<>();
        private final List<byte[]> beforeReady = new ArrayList<>();
        private boolean answerHello = true;
        private String version = "fake-1";
        private List<String> capabilities = List.of("echo");
        private FrameLimits readLimits = new FrameLimits(FrameLimits.HEADER_CEILING, 64 << 20);
        private RenderResult renders;
        private ErrorCode renderError;
        private long renderMillis;
        private java.util.function.LongSupplier clock = System::currentTimeMillis;
        private java.util.function.Consumer<Frame> onRequest = f -> { };

        /**
         * The wall clock STATUS reports (default: the host's), e.g. one that lags and settles the
         * way gVisor's calibrated clock does after a restore.
         */
        public Builder clock(java.util.function.LongSupplier c) {
            this.clock = Objects.requireNonNull(c);
            return this;
        }

        /** Told of every request as it is received (HELLOs excluded), before it is answered. */
        public Builder onRequest(java.util.function.Consumer<Frame> listener) {
            this.onRequest = Objects.requireNonNull(listener);
            return this;
        }

        /** Bytes written as soon as a connection is accepted, before anything is read. */
        public Builder onConnect(byte[] bytes) {
            onConnect.add(bytes.clone());
            return this;
        }

        /** Bytes written after HELLO arrived and before READY. */
        public Builder beforeReady(byte[] bytes) {
            beforeReady.add(bytes.clone());
            return this;
        }

        /** {@code false}: never answer HELLO (the handshake must time out). */
        public Builder answerHello(boolean answer) {
            this.answerHello = answer;
            return this;
        }

        public Builder version(String v) {
            this.version = Objects.requireNonNull(v);
            return this;
        }

        public Builder capabilities(List<String> caps) {
            this.capabilities = List.copyOf(caps);
            return this;
        }

        /** What the worker's reader accepts (default: 64 MiB bodies). */
        public Builder readLimits(FrameLimits limits) {
            this.readLimits = Objects.requireNonNull(limits);
            return this;
        }

        /** RENDER is answered with {@code result} as its RENDER_RESULT (default: ERROR UNSUPPORTED). */
        public Builder renders(RenderResult result) {
            this.renders = Objects.requireNonNull(result);
            return this;
        }

        /** RENDER is answered with ERROR {@code code} (whatever {@link #renders} says). */
        public Builder renderError(ErrorCode code) {
            this.renderError = Objects.requireNonNull(code);
            return this;
        }

        /** Every RENDER is answered {@code millis} late (a render that takes that long). */
        public Builder renderMillis(long millis) {
            this.renderMillis = millis;
            return this;
        }

        /** Listens on an AF_UNIX socket at {@code path}. */
        public FakeWorker unix(Path path) throws IOException {
            Files.deleteIfExists(path);
            ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            server.bind(UnixDomainSocketAddress.of(path));
            return new FakeWorker(this, server, path, null);
        }

        /** Listens on loopback TCP, on a free port. */
        public FakeWorker tcp() throws IOException {
            ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.INET);
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return new FakeWorker(this, server, null, (InetSocketAddress) server.getLocalAddress());
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    // ------------------------------------------------------------------ byte helpers

    /** {@code n} seeded random bytes. */
    public static byte[] garbage(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** A well-formed READY with another nonce: what an earlier session's worker would have sent. */
    public static byte[] staleReady(String nonce) {
        return encode(Messages.toFrame(new Ready(nonce, "stale", List.of())));
    }

    /** Stale bytes that look like a frame start: "QVMF" and a prefix whose CRC is wrong. */
    public static byte[] fakeMagic() {
        byte[] real = encode(Frame.of(FrameKind.ECHO_REPLY, 9, new byte[3]));
        real[27] ^= 0x5A; // break the CRC
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes("Q?QV QVM QVMF".getBytes());
        out.writeBytes(java.util.Arrays.copyOf(real, FrameCodec.PREFIX_BYTES));
        return out.toByteArray();
    }

    /** A checksummed prefix with no header and a body of {@code bodyBytes} declared. */
    static byte[] prefix(FrameKind kind, long requestId, int bodyBytes) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(FrameCodec.PREFIX_BYTES);
        b.putInt(FrameCodec.MAGIC).put((byte) FrameCodec.VERSION).put((byte) kind.code()).putShort((short) 0)
                .putLong(requestId).putInt(0).putInt(bodyBytes);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b.array(), 0, 24);
        return b.putInt((int) crc.getValue()).array();
    }

    /** The whole frame's bytes, without limits. */
    public static byte[] encode(Frame frame) {
        try {
            return FrameCodec.encode(frame, new FrameLimits(FrameLimits.HEADER_CEILING, FrameLimits.BODY_CEILING));
        } catch (FrameTooLargeException e) {
            throw new IllegalStateException(e);
        }
    }

    // ------------------------------------------------------------------ the server

    private final Builder script;
    private final ServerSocketChannel server;
    private final Path socketPath;
    private final InetSocketAddress tcpAddress;
    private final Thread acceptor;
    private final List<Thread> handlers = new CopyOnWriteArrayList<>();
    private final List<SocketChannel> connections = new CopyOnWriteArrayList<>();
    private final ConcurrentLinkedQueue<Effect> effects = new ConcurrentLinkedQueue<>();
    private final List<Frame> received = new CopyOnWriteArrayList<>();
    private final List<Hello> hellos = new CopyOnWriteArrayList<>();
    private final List<Throwable> errors = new CopyOnWriteArrayList<>();
    private final AtomicInteger accepted = new AtomicInteger();
    private volatile boolean closed;

    private FakeWorker(Builder script, ServerSocketChannel server, Path socketPath, InetSocketAddress tcpAddress) {
        this.script = script;
        this.server = server;
        this.socketPath = socketPath;
        this.tcpAddress = tcpAddress;
        this.acceptor = new Thread(this::acceptLoop, "fake-worker-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** The AF_UNIX path ({@code null} for TCP). */
    public Path socketPath() {
        return socketPath;
    }

    /** The TCP address ({@code null} for AF_UNIX). */
    public InetSocketAddress tcpAddress() {
        return tcpAddress;
    }

    /** Queues effects for the next requests, in order. */
    public FakeWorker enqueue(Effect... next) {
        Collections.addAll(effects, next);
        return this;
    }

    /** Requests received so far (HELLOs excluded), in order. */
    public List<Frame> received() {
        return List.copyOf(received);
    }

    /** HELLOs received so far. */
    public List<Hello> hellos() {
        return List.copyOf(hellos);
    }

    /** Connections accepted so far. */
    public int connectionsAccepted() {
        return accepted.get();
    }

    /** Unexpected failures inside the fake (a test may assert there were none). */
    public List<Throwable> errors() {
        return List.copyOf(errors);
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    errors.add(e);
                }
                return;
            }
            accepted.incrementAndGet();
            connections.add(ch);
            Thread t = new Thread(() -> serve(ch), "fake-worker-conn-" + accepted.get());
            t.setDaemon(true);
            handlers.add(t);
            t.start();
        }
    }

    private void serve(SocketChannel ch) {
        // One thread reads and writes, never at the same time (JDK 17's channel streams share a lock).
        try (ch) {
            InputStream in = Channels.newInputStream(ch);
            OutputStream out = Channels.newOutputStream(ch);
            FrameWriter writer = new FrameWriter(out, new FrameLimits(FrameLimits.HEADER_CEILING, FrameLimits.BODY_CEILING));
            FrameReader reader = new FrameReader(in, script.readLimits);
            for (byte[] b : script.onConnect) {
                out.write(b);
            }
            out.flush();
            List<Frame> heldBack = new ArrayList<>();
            while (!closed) {
                Frame f;
                try {
                    f = reader.read();
                } catch (FrameTooLargeException e) {
                    writer.write(Messages.toFrame(new ErrorReply(e.requestId(), ErrorCode.TOO_LARGE, "request too large")));
                    continue;
                } catch (FrameException e) {
                    continue;
                }
                if (f == null) {
                    return;
                }
                if (f.kind() == FrameKind.HELLO) {
                    onHello(f, out, writer);
                    continue;
                }
                received.add(f);
                script.onRequest.accept(f);
                Effect effect = effects.poll();
                if (effect == null) {
                    effect = new Normal();
                }
                if (effect instanceof CloseConnection) {
                    return;
                }
                if (effect instanceof Stall) {
                    continue;
                }
                List<Frame> release = new ArrayList<>(heldBack);
                heldBack.clear();
                if (effect instanceof AnswerAfterNext) {
                    heldBack.add(normalAnswer(f));
                } else if (effect instanceof ReplyWithBody r) {
                    writer.write(new Frame(replyKind(f), f.requestId(), null, new byte[r.bytes()]));
                } else if (effect instanceof Error e) {
                    writer.write(Messages.toFrame(new ErrorReply(f.requestId(), e.code(), e.message())));
                } else if (effect instanceof WrongId w) {
                    Frame right = normalAnswer(f);
                    writer.write(new Frame(right.kind(), right.requestId() + w.delta(), right.header(), right.body()));
                } else if (effect instanceof WrongKind w) {
                    writer.write(Frame.of(w.kind(), f.requestId(), new byte[0]));
                } else if (effect instanceof AnswerTwice) {
                    Frame answer = normalAnswer(f);
                    writer.write(answer);
                    writer.write(answer);
                } else if (effect instanceof RawBytesThenNormal r) {
                    out.write(r.bytes());
                    writer.write(normalAnswer(f));
                } else if (effect instanceof PartialReply p) {
                    out.write(prefix(replyKind(f), f.requestId(), p.declaredBytes()));
                    out.write(new byte[p.sentBytes()]);
                    out.flush();
                } else {
                    writer.write(normalAnswer(f));
                }
                for (Frame held : release) {
                    writer.write(held);
                }
                if (f.kind() == FrameKind.GOODBYE && effect instanceof Normal) {
                    return;
                }
            }
        } catch (IOException | UncheckedIOException e) {
            if (!closed && !(e instanceof java.nio.channels.AsynchronousCloseException)) {
                // the host closing its end is normal; anything else is worth a look
                if (!(e.getMessage() != null && e.getMessage().contains("Broken pipe"))
                        && !(e.getMessage() != null && e.getMessage().contains("Connection reset"))) {
                    errors.add(e);
                }
            }
        }
    }

    private void onHello(Frame f, OutputStream out, FrameWriter writer) throws IOException {
        Hello hello = Messages.hello(f);
        hellos.add(hello);
        for (byte[] b : script.beforeReady) {
            out.write(b);
        }
        out.flush();
        if (script.answerHello) {
            writer.write(Messages.toFrame(new Ready(hello.nonce(), script.version, script.capabilities)));
        }
    }

    private static FrameKind replyKind(Frame request) {
        FrameKind k = request.kind().replyKind();
        return k == null ? FrameKind.ERROR : k;
    }

    private Frame normalAnswer(Frame f) {
        switch (f.kind()) {
            case ECHO:
                return Frame.of(FrameKind.ECHO_REPLY, f.requestId(), f.body());
            case STATUS:
                byte[] random = new byte[WorkerStatus.RANDOM_BYTES];
                new java.security.SecureRandom().nextBytes(random);
                return Messages.toFrame(WorkerStatus.of(script.clock.getAsLong(), random, received.size() - 1L, hellos.size()), f.requestId());
            case GOODBYE:
                return Frame.of(FrameKind.GOODBYE, f.requestId(), (byte[]) null);
            case RENDER:
                if (script.renderMillis > 0) {
                    try {
                        Thread.sleep(script.renderMillis);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                if (script.renderError != null) {
                    return Messages.toFrame(new ErrorReply(f.requestId(), script.renderError, "the fake worker's "
                            + script.renderError));
                }
                if (script.renders != null) {
                    return Messages.toFrame(script.renders, f.requestId());
                }
                return Messages.toFrame(new ErrorReply(f.requestId(), ErrorCode.UNSUPPORTED, "the fake worker does not " + f.kind()));
            default:
                return Messages.toFrame(new ErrorReply(f.requestId(), ErrorCode.UNSUPPORTED, "the fake worker does not " + f.kind()));
        }
    }

    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        server.close();
        for (SocketChannel c : connections) {
            c.close();
        }
        try {
            acceptor.join(10_000);
            for (Thread t : handlers) {
                t.join(10_000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (socketPath != null) {
            Files.deleteIfExists(socketPath);
        }
    }
}
