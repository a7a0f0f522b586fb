package io.qvm.transport;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Ready;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * The host's end of one connection to the worker inside a sandbox: frames out, frames back,
 * matched by request id. Implementations: virtio-serial over QEMU's AF_UNIX chardev
 * ({@code io.qvm.transport.netty.SerialTransport}), loopback TCP for hosts without AF_UNIX
 * ({@code io.qvm.transport.netty.TcpTransport}) and virtio-vsock
 * ({@code io.qvm.transport.vsock.VsockTransport}); all share one dispatcher, so they behave alike.
 *
 * <p>Usage:
 * <pre>{@code
 * try (SandboxTransport t = SerialTransport.connect(socket, limits, Duration.ofSeconds(5), qemu::isAlive)) {
 *     Ready ready = t.handshake(Hello.fresh(limits), Duration.ofSeconds(30));
 *     Frame reply = t.request(Frame.of(FrameKind.ECHO, 0, body)).get(10, TimeUnit.SECONDS);
 * }
 * }</pre>
 *
 * <p><b>Session.</b> Nothing is sent or delivered before {@link #handshake}: it sends HELLO and
 * discards (and counts) every byte and frame until a READY with the same nonce arrives, so
 * whatever an earlier session left on the port is never taken for an answer.
 *
 * <p><b>Requests.</b> The transport assigns request ids (1, 2, 3, … per transport; 0 belongs to
 * HELLO/READY) — the id in the frame given to {@link #request} is ignored. Each request completes
 * with the one frame that carries its id:
 * <ul>
 *   <li>its reply kind ({@link FrameKind#replyKind()}) → the future completes with that frame;</li>
 *   <li>an ERROR frame → exceptionally with {@link WorkerErrorException} (the decoded
 *   {@link io.qvm.protocol.ErrorReply});</li>
 *   <li>a reply above the response limits → exceptionally with {@link io.qvm.protocol.FrameTooLargeException}
 *   (the reply was skipped without allocation; the transport goes on);</li>
 *   <li>a reply with an unusable header or the wrong kind → {@link io.qvm.protocol.FrameCorruptException};</li>
 *   <li>connection loss or {@link #close()} → every pending request at once with
 *   {@link TransportException} (its cause says why).</li>
 * </ul>
 * A request above the worker's limits fails with {@link io.qvm.protocol.FrameTooLargeException} before a byte is
 * written. There is no per-request deadline here: use {@code orTimeout} on the future (an
 * abandoned id's late reply is counted as discarded). Futures complete on the transport's I/O
 * thread: do not block in dependent stages (use the {@code *Async} variants for heavy work).
 *
 * <p>Closing is idempotent and releases every socket, thread and event loop the transport owns.
 */
public interface SandboxTransport extends AutoCloseable {

    /** What carries the frames: {@code "serial"}, {@code "vsock"} or {@code "tcp"}. */
    String kind();

    /**
     * Sends {@code hello} and waits for the READY that carries its nonce, discarding everything
     * before it (stale bytes, stale READYs with another nonce, any other frame).
     *
     * @param hello its limits must be the ones this transport was opened with
     * @throws TransportException no such READY within {@code deadline}; says what was discarded
     * @throws TransportException the connection was lost (or closed) first
     * @throws IllegalStateException the handshake already succeeded on this transport
     */
    Ready handshake(Hello hello, Duration deadline) throws TransportException, InterruptedException;

    /**
     * Sends a request and returns its reply; see the class comment for every way it completes.
     *
     * @param request a request kind (ECHO, RENDER, GOODBYE); its request id is replaced
     * @throws IllegalArgumentException if the kind is not a request kind
     * @throws IllegalStateException if the handshake has not succeeded yet
     */
    CompletableFuture<Frame> request(Frame request);

    /** Same as {@code request(new Frame(kind, 0, header, body))}. */
    default CompletableFuture<Frame> request(FrameKind kind, ObjectNode header, byte[] body) {
        return request(new Frame(kind, 0, header, body));
    }

    /**
     * Completes when the transport is closed: normally after {@link #close()}, exceptionally with
     * {@link TransportException} when the connection was lost first.
     */
    CompletableFuture<Void> closed();

    /**
     * Bytes the frame decoder skipped so far: stale bytes between frames and the bytes of
     * rejected frames (too large, corrupt). Frames dropped whole are in {@link #discardedFrames()}.
     */
    long discardedBytes();

    /**
     * Well-formed frames that were dropped: everything before the handshake's READY (stale READYs
     * included) and replies nobody waits for any more; plus rejected frames nobody waits for.
     */
    long discardedFrames();

    /** Fails pending requests with {@link TransportException} and releases everything. Idempotent. */
    @Override
    void close();
}
