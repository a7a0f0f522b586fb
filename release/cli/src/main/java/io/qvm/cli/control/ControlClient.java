package io.qvm.cli.control;

import io.qvm.cli.ExitCode;
import io.qvm.cli.CliException;
import io.qvm.protocol.Messages;
import io.qvm.RenderFailedException;
import io.qvm.SandboxLostException;
import io.qvm.SandboxException;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.FrameWriter;
import io.qvm.protocol.Hello;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A client of a {@link ControlServer}: one connection, one request at a time, each with a
 * deadline. Failures come back as the same typed exceptions the {@code Sandbox} API throws
 * (see {@link ControlServer} for the ERROR header's {@code kind}).
 *
 * <pre>{@code
 * try (ControlClient c = ControlClient.connect(ready.controlSocket(), limits)) {
 *     RenderResult png = c.render(RenderRequest.svg(bytes), Duration.ofMinutes(2));
 * }
 * }</pre>
 */
public final class ControlClient implements AutoCloseable {

    private final Path socket;
    private final SocketChannel channel;
    private final FrameReader reader;
    private final FrameWriter writer;
    private final long maxRequestBytes;
    private final AtomicLong nextId = new AtomicLong(1);
    private final ScheduledExecutorService timer;

    private ControlClient(Path socket, SocketChannel channel, long maxRequestBytes, long maxResponseBytes) {
        this.socket = socket;
        this.channel = channel;
        this.maxRequestBytes = maxRequestBytes;
        this.reader = new FrameReader(Channels.newInputStream(channel),
                new FrameLimits(FrameLimits.DEFAULT_HEADER_BYTES, (int) Math.min(maxResponseBytes, FrameLimits.BODY_CEILING)));
        this.writer = new FrameWriter(Channels.newOutputStream(channel),
                new FrameLimits(FrameLimits.DEFAULT_HEADER_BYTES, (int) Math.min(maxRequestBytes, FrameLimits.BODY_CEILING)));
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "qvm-control-deadline");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Connects to a control socket.
     *
     * @param maxRequestBytes the sandbox's request limit (a bigger document fails here, typed TOO_LARGE)
     * @param maxResponseBytes the largest reply body accepted
     * @throws IOException nobody listens there (the supervisor is gone)
     */
    public static ControlClient connect(Path socket, long maxRequestBytes, long maxResponseBytes) throws IOException {
        Objects.requireNonNull(socket, "socket");
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            ch.connect(UnixDomainSocketAddress.of(socket));
        } catch (IOException e) {
            ch.close();
            throw new IOException("cannot connect to the control socket " + socket + ": " + e.getMessage(), e);
        }
        return new ControlClient(socket, ch, maxRequestBytes, maxResponseBytes);
    }

    /** Connects with the limits recorded in {@code ready}. */
    public static ControlClient connect(ReadyFile ready) throws IOException {
        return connect(Path.of(ready.controlSocket()), ready.maxRequestBytes(), ready.maxResponseBytes());
    }

    public RenderResult render(RenderRequest request, Duration deadline) throws IOException {
        return renderServed(request, deadline).result();
    }

    /**
     * Renders and says which sandbox did, as the supervisor reports it ({@code servedBy} is null
     * from a supervisor that does not say: one of an older qvm, which always reused its sandbox).
     */
    public ControlTarget.Rendered renderServed(RenderRequest request, Duration deadline) throws IOException {
        Frame reply = call(Messages.toFrame(request, 0), deadline);
        try {
            RenderResult result = Messages.renderResult(reply);
            com.fasterxml.jackson.databind.JsonNode by = reply.header().get("servedBy");
            ControlTarget.ServedBy servedBy = null;
            if (by != null && by.isObject()) {
                if (!by.path("sandbox").isTextual() || !by.path("mode").isTextual()
                        || !by.path("earlierDocuments").canConvertToLong()) {
                    throw new IllegalArgumentException("servedBy needs sandbox, mode and earlierDocuments: " + by);
                }
                servedBy = new ControlTarget.ServedBy(by.get("sandbox").asText(), by.get("mode").asText(),
                        by.get("earlierDocuments").asLong(), by.path("restored").asBoolean(false));
            }
            return new ControlTarget.Rendered(result, servedBy);
        } catch (IllegalArgumentException e) {
            throw new SandboxException("the supervisor's render result is malformed: " + e.getMessage());
        }
    }

    public byte[] echo(byte[] payload, Duration deadline) throws IOException {
        return call(Frame.of(FrameKind.ECHO, 0, payload), deadline).body();
    }

    /** Asks the supervisor to stop its sandbox; returns once it has stopped. */
    public void goodbye(Duration deadline) throws IOException {
        call(Frame.of(FrameKind.GOODBYE, 0, (byte[]) null), deadline);
    }

    /**
     * Sends one request (its id is replaced; a HELLO keeps id 0) and returns the reply of the
     * matching kind (READY for HELLO).
     *
     * @throws RenderFailedException and the other typed exceptions for an ERROR reply
     * @throws SandboxLostException no reply within {@code deadline} (the connection is closed)
     * @throws IOException the connection broke
     */
    public synchronized Frame call(Frame request, Duration deadline) throws IOException {
        boolean hello = request.kind() == FrameKind.HELLO;
        long id = hello ? Hello.REQUEST_ID : nextId.getAndIncrement();
        FrameKind expected = hello ? FrameKind.READY : request.kind().replyKind();
        Frame out = new Frame(request.kind(), id, request.header(), request.body());
        AtomicBoolean expired = new AtomicBoolean();
        ScheduledFuture<?> watchdog = timer.schedule(() -> {
            expired.set(true);
            closeQuietly();
        }, deadline.toMillis(), TimeUnit.MILLISECONDS);
        try {
            try {
                writer.write(out);
            } catch (FrameTooLargeException e) {
                throw new RenderFailedException(ErrorCode.TOO_LARGE, "the request is " + out.body().length
                        + " bytes, above the sandbox's limit of " + maxRequestBytes + " bytes");
            }
            while (true) {
                Frame f;
                try {
                    f = reader.read();
                } catch (FrameTooLargeException e) {
                    throw new RenderFailedException(ErrorCode.TOO_LARGE, "the reply is above this client's limit: "
                            + e.getMessage());
                } catch (FrameException e) {
                    continue;
                }
                if (f == null) {
                    throw new IOException("the supervisor closed the control connection " + socket
                            + " without answering " + request.kind());
                }
                if (f.requestId() != id) {
                    continue; // not ours (cannot happen with one request at a time; skip defensively)
                }
                if (f.kind() == FrameKind.ERROR) {
                    throw typed(f);
                }
                if (f.kind() != expected) {
                    throw new SandboxException("the supervisor answered " + request.kind() + " with " + f.kind());
                }
                return f;
            }
        } catch (IOException e) {
            if (expired.get()) {
                throw new CliException(ExitCode.TIMEOUT, "TIMEOUT", "no answer from the sandbox's supervisor on "
                        + socket + " within " + deadline.toSeconds() + " s", "qvm logs shows what the supervisor did", e);
            }
            throw e;
        } finally {
            watchdog.cancel(false);
        }
    }

    /** The exception the in-process API would have thrown for this ERROR frame. */
    static RuntimeException typed(Frame f) {
        ErrorReply e = Messages.errorReply(f);
        String kind = f.header().path("kind").asText(ControlServer.KIND_RENDER_FAILED);
        switch (kind) {
            case ControlServer.KIND_TIMEOUT:
                return new SandboxLostException(SandboxLostException.Reason.DEADLINE_EXCEEDED, e.message());
            case ControlServer.KIND_CRASHED:
                return new SandboxLostException(SandboxLostException.Reason.CRASHED, e.message());
            case ControlServer.KIND_INTERNAL:
                return new SandboxException(e.message());
            default:
                return new RenderFailedException(e.code(), e.message());
        }
    }

    private void closeQuietly() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closeQuietly();
        timer.shutdownNow();
    }
}
