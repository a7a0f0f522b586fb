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
 * discards every byte and frame until a READY with the same nonce arrives, so whatever an earlier
 * session left on the port is never taken for an answer (what it discarded is named only if no
 * such READY comes in time).
 *
 * <p><b>Requests.</b> The transport assigns request ids (1, 2, 3, … per transport; 0 belongs to
 * HELLO/READY) — the id in the frame given to {@link #request} is ignored. Each request completes
 * with the one frame that carries its id:
 * <ul>
 *   <li>its reply kind ({@link FrameKind#replyKind()}) → the future completes with that frame;</li>
 *   <li>an ERROR frame → exceptionally with {@link WorkerErrorException} (the decoded
 *   {@link io.qvm.protocol.ErrorReply});</li>
 *   <li>connection loss or {@link #close()} → every pending request at once with
 *   {@link TransportException} (its cause says why);</li>
 *   <li>a protocol violation (below) → every pending request at once with {@link TransportException}
 *   reason {@link TransportException.Reason#PROTOCOL_VIOLATION}.</li>
 * </ul>
 * A request above the worker's limits fails with {@link io.qvm.protocol.FrameTooLargeException} before a byte is
 * written. There is no per-request deadline here: use {@code orTimeout} on the future (the late
 * reply to a request given up on this way, or cancelled, is dropped). Futures complete on the
 * transport's I/O thread: do not block in dependent stages (use the {@code *Async} variants for
 * heavy work).
 *
 * <p><b>Protocol violations.</b> After READY the worker sends nothing but one answer per request,
 * under that request's id (adr/0003). Anything else is handled the moment it is decoded, as one
 * event: bytes that are not a frame; a frame no request waits for (id 0, an id never sent, a
 * second answer — but not the late answer to an abandoned request); an answer of the wrong kind;
 * a frame the host refuses (above the response limit — an honest worker answers
 * {@code ERROR TOO_LARGE} instead — or with an unusable header, kind or version). The transport
 * then drops the connection: every pending request fails at once with a {@link TransportException}
 * of reason {@link TransportException.Reason#PROTOCOL_VIOLATION} whose message says what the worker
 * sent (its cause: the {@link io.qvm.protocol.FrameCorruptException} or
 * {@link io.qvm.protocol.FrameTooLargeException}, if any),
 * {@link #closed()} completes exceptionally with the same exception, and every later
 * {@link #request} fails with it at once, before anything is written. Listen on {@link #closed()}
 * to react without a request in flight.
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
     *     meanwhile (stale bytes, frames by kind)
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
     * {@link TransportException} when the connection was lost or dropped first — its
     * {@link TransportException#reason() reason} {@link TransportException.Reason#PROTOCOL_VIOLATION}
     * at the moment the worker broke the protocol, {@code FRAME_STALLED} when a frame stalled,
     * {@code CLOSED} when the peer went away.
     */
    CompletableFuture<Void> closed();

    /** Fails pending requests with {@link TransportException} and releases everything. Idempotent. */
    @Override
    void close();
}
