package io.qvm.internal.sandbox;

import io.qvm.protocol.image.ControlProtocol;
import io.qvm.protocol.image.KernelCommandLine;
import io.qvm.protocol.util.Retry;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The host's end of the guest init's control port ({@link KernelCommandLine#CONTROL_PORT}, a
 * virtio-serial port that only the init opens; the worker inside gVisor cannot reach it). One
 * ASCII line each way, the words of {@link ControlProtocol} (docs/CONTRACTS.md):
 *
 * <pre>
 *   host → init   restore &lt;epochSeconds&gt; &lt;token&gt; [&lt;seed&gt;]  set the wall clock, reseed the CRNG
 *   init → host   restored &lt;token&gt; clock=&lt;s&gt; forks=&lt;n&gt; [reseeded=&lt;0|1&gt;]
 *   host → init   setclock &lt;epochSeconds&gt; &lt;token&gt;       set the wall clock only
 *   init → host   clockset &lt;token&gt; clock=&lt;s&gt;
 *   host → init   step &lt;micros&gt; &lt;token&gt;             step the wall clock (0: read it)
 *   init → host   stepped &lt;token&gt; clock=&lt;s&gt;.&lt;us&gt;
 *   host → init   ping &lt;token&gt;                        channel check
 *   init → host   pong &lt;token&gt;
 *   init → host   error &lt;token|-&gt; &lt;reason&gt;
 * </pre>
 *
 * A reply is matched by its token (a fresh random one per command), so a line left on the port by
 * an earlier session, or by the template the clone was restored from, is never taken for the
 * answer. Lines are bounded ({@value #MAX_LINE} bytes: a longer one is dropped) and only the
 * fixed shapes above are accepted.
 */
public final class GuestControl implements AutoCloseable {

    /** Longest line read; longer ones are skipped to their end. */
    static final int MAX_LINE = 256;

    private static final Pattern RESTORED = ControlProtocol.restoredPattern();
    private static final Pattern PONG = ControlProtocol.pongPattern();
    private static final Pattern CLOCK_SET = ControlProtocol.clockSetPattern();
    private static final Pattern STEPPED = ControlProtocol.steppedPattern();
    private static final Pattern ERROR = ControlProtocol.errorPattern();
    private static final SecureRandom TOKENS = new SecureRandom();
    private static final Duration CONNECT_PAUSE = Duration.ofMillis(10);

    private final SocketChannel channel;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>(64);
    private final Thread reader;
    private volatile boolean closed;

    private GuestControl(SocketChannel channel, String name) {
        this.channel = channel;
        this.reader = new Thread(this::readLoop, "qvm-control-" + name);
        this.reader.setDaemon(true);
        this.reader.start();
    }

    /**
     * What the init answered to {@code restore}.
     *
     * @param guestEpochSeconds the guest's wall clock right after it was set
     * @param forks             how many times the guest kernel logged "crng reseeded due to
     *                          virtual machine fork" (0: it did not reseed within the init's wait,
     *                          or the machine has no vmgenid device)
     * @param reseeded          whether the init reseeded the CRNG from the host's seed (false when
     *                          none was sent, or from an init that does not say)
     */
    public record Restored(long guestEpochSeconds, int forks, boolean reseeded) {
    }

    /**
     * Connects to QEMU's socket for the control port, retrying while it is absent or refuses
     * (QEMU starting), until {@code timeout}; fails at once when {@code peerAlive} turns false.
     */
    public static GuestControl connect(Path socket, Duration timeout, BooleanSupplier peerAlive)
            throws IOException, InterruptedException {
        Objects.requireNonNull(socket, "socket");
        Retry retry = Retry.until(timeout, CONNECT_PAUSE, CONNECT_PAUSE, peerAlive);
        IOException last = null;
        while (true) {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                ch.connect(UnixDomainSocketAddress.of(socket));
                return new GuestControl(ch, socket.getParent() == null ? "?" : socket.getParent().getFileName().toString());
            } catch (IOException e) {
                ch.close();
                last = e;
            }
            if (!retry.peerAlive()) {
                throw new IOException("QEMU exited before its control socket " + socket + " accepted a connection");
            }
            if (retry.expired()) {
                throw new IOException("the control socket " + socket + " did not accept a connection within "
                        + timeout.toMillis() + " ms: " + (last == null ? "" : last.getMessage()));
            }
            retry.pause("connecting to the control socket " + socket);
        }
    }

    /**
     * Sets the guest's wall clock to {@code now} (whole seconds, rounded to the nearest, so the
     * guest is within half a second plus the command's transit), has the init reseed the guest
     * kernel's CRNG from {@code seed} if given ({@value ControlProtocol#SEED_BYTES} bytes of the
     * host's, never logged), and waits for the init's answer, which comes once that is done and
     * the kernel's own vmgenid reseed, where the machine has one, came or was waited for.
     *
     * @throws IOException no matching answer within {@code timeout}, an error answer, or the port closed
     */
    public Restored restore(Instant now, Optional<byte[]> seed, Duration timeout) throws IOException,
            InterruptedException {
        long seconds = now.plusMillis(500).getEpochSecond();
        String token = token();
        String command = ControlProtocol.RESTORE + " " + seconds + " " + token;
        if (seed.isPresent()) {
            if (seed.get().length != ControlProtocol.SEED_BYTES) {
                throw new IllegalArgumentException("a seed is " + ControlProtocol.SEED_BYTES + " bytes, not "
                        + seed.get().length);
            }
            command += " " + HexFormat.of().formatHex(seed.get());
        }
        Matcher m = await(command, token, RESTORED, timeout);
        return new Restored(Long.parseLong(m.group(2)), Integer.parseInt(m.group(3)), "1".equals(m.group(4)));
    }

    /** {@value ControlProtocol#SEED_BYTES} fresh bytes of the host's strong random generator, for {@link #restore}. */
    public static byte[] freshSeed() {
        byte[] b = new byte[ControlProtocol.SEED_BYTES];
        TOKENS.nextBytes(b);
        return b;
    }

    /**
     * Sets the guest's wall clock to {@code now} (whole seconds, rounded to the nearest) and
     * nothing else, for a sandbox resumed after a pause whose init does not know {@code step}
     * ({@link #syncClock}): its clocks stood still while it was paused. Returns the guest's clock (epoch seconds) right after it was set.
     *
     * @throws IOException no matching answer within {@code timeout}, an error answer, or the port closed
     */
    public long setClock(Instant now, Duration timeout) throws IOException, InterruptedException {
        long seconds = now.plusMillis(500).getEpochSecond();
        String token = token();
        Matcher m = await(ControlProtocol.SET_CLOCK + " " + seconds + " " + token, token, CLOCK_SET, timeout);
        return Long.parseLong(m.group(2));
    }

    /**
     * How far from the host's a guest's clock may certainly be after {@link #syncClock} (its offset
     * beyond the exchange's own uncertainty) before the sandbox is refused or lost.
     */
    public static final Duration MAX_CLOCK_SKEW = Duration.ofMillis(1500);

    /** {@link #syncClock} stops stepping once the guest is this close to the host (microseconds). */
    static final long CLOSE_ENOUGH_MICROS = 10_000;
    /** {@link #syncClock} exchanges at most this many {@code step}s. */
    static final int MAX_STEPS = 3;

    /**
     * What {@link #syncClock} left: the guest's wall clock minus the host's at the last exchange
     * ({@code offsetMicros}), measured to within {@code uncertaintyMicros} (half that exchange's
     * round trip: the init read its clock at some moment of it), after {@code steps} exchanges.
     */
    public record Synced(long offsetMicros, long uncertaintyMicros, int steps) {

        /** Whether the guest's clock is certainly more than {@code slack} from the host's. */
        public boolean off(Duration slack) {
            return Math.abs(offsetMicros) - uncertaintyMicros > slack.toNanos() / 1000;
        }

        @Override
        public String toString() {
            return (offsetMicros >= 0 ? "+" : "-") + Math.abs(offsetMicros) / 1000 + " ms ±" + uncertaintyMicros / 1000
                    + " ms after " + steps + " step" + (steps == 1 ? "" : "s");
        }
    }

    /**
     * Brings the guest's wall clock to the host's, to within {@link #CLOSE_ENOUGH_MICROS} or the
     * exchange's own uncertainty: {@code restore} and {@code setclock} set whole seconds, and the
     * guest is behind by however long the command took to reach the init, a second and more on a
     * loaded host right after a resume. The first exchange steps the clock by {@code firstStepMicros}
     * (0 to only measure it; how long the VM was stopped, after a pause, when its clock stood still),
     * and each answer gives the guest's clock right after the step; each further exchange steps away
     * the offset the last one measured against the midpoint of its round trip, the init reading and
     * setting in one process so that its own lateness does not count. At most {@link #MAX_STEPS}.
     *
     * @throws Refused with {@link Refused#unknownCommand()} from an init older than {@code step};
     *     with {@link ControlProtocol#STEP_FAILED} if the guest could not read or set its clock
     * @throws IOException no matching answer within {@code timeout} (for all exchanges), or the port closed
     */
    public Synced syncClock(long firstStepMicros, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        long step = firstStepMicros;
        Synced last = null;
        for (int n = 1; n <= MAX_STEPS; n++) {
            String token = token();
            long sent = nowMicros();
            long sentNanos = System.nanoTime(); // the round trip by the monotonic clock: the wall clock may be stepped
            Matcher m = await(ControlProtocol.STEP + " " + step + " " + token, token, STEPPED,
                    Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            long uncertainty = ((System.nanoTime() - sentNanos) / 1000 + 1) / 2;
            long guest = Long.parseLong(m.group(2)) * 1_000_000 + Long.parseLong(m.group(3));
            last = new Synced(guest - (sent + uncertainty), uncertainty, n);
            if (Math.abs(last.offsetMicros()) <= Math.max(CLOSE_ENOUGH_MICROS, uncertainty)) {
                break; // close, or closer than this channel can tell
            }
            step = -last.offsetMicros();
        }
        return last;
    }

    private static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }

    /** Sends {@code ping} and waits for the matching {@code pong}. */
    public void ping(Duration timeout) throws IOException, InterruptedException {
        String token = token();
        await(ControlProtocol.PING + " " + token, token, PONG, timeout);
    }

    private Matcher await(String command, String token, Pattern reply, Duration timeout)
            throws IOException, InterruptedException {
        send(command);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left <= 0 ? null : lines.poll(left, TimeUnit.NANOSECONDS);
            if (line == GONE) { // the port closed (QEMU exited): no answer will come, say so now
                lines.offer(GONE);
                line = null;
            }
            if (line == null) {
                throw new IOException(closed ? "the guest's control port closed before it answered '" + verb(command)
                        + "'" : "the guest init did not answer '" + verb(command) + "' within " + timeout.toMillis()
                        + " ms");
            }
            Matcher m = reply.matcher(line);
            if (m.matches() && m.group(1).equals(token)) {
                return m;
            }
            Matcher e = ERROR.matcher(line);
            // "error -" (a line without a readable token) may be stale noise: skipped like it
            if (e.matches() && e.group(1).equals(token)) {
                throw new Refused(verb(command), e.group(2));
            }
            // anything else: a stale answer or noise, skipped
        }
    }

    /** The init answered {@code error <token> <reason>} to a command. */
    public static final class Refused extends IOException {
        private static final long serialVersionUID = 1L;
        private final String reason;

        Refused(String verb, String reason) {
            super("the guest init refused '" + verb + "': " + reason);
            this.reason = reason;
        }

        /** {@link ControlProtocol#UNKNOWN_COMMAND}: an init older than the word. */
        public boolean unknownCommand() {
            return ControlProtocol.UNKNOWN_COMMAND.equals(reason);
        }
    }

    private static String verb(String command) {
        return command.substring(0, command.indexOf(' '));
    }

    private void send(String line) throws IOException {
        ByteBuffer b = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.US_ASCII));
        synchronized (channel) {
            while (b.hasRemaining()) {
                channel.write(b);
            }
        }
    }

    private void readLoop() {
        ByteBuffer buf = ByteBuffer.allocate(4096);
        byte[] line = new byte[MAX_LINE];
        int len = 0;
        boolean overlong = false;
        try {
            while (channel.read(buf.clear()) >= 0) {
                buf.flip();
                while (buf.hasRemaining()) {
                    byte c = buf.get();
                    if (c == '\n') {
                        if (!overlong) {
                            String s = new String(line, 0, len, StandardCharsets.US_ASCII).strip();
                            if (!s.isEmpty() && !lines.offer(s)) {
                                lines.poll(); // keep the newest: a flood cannot grow this queue
                                lines.offer(s);
                            }
                        }
                        len = 0;
                        overlong = false;
                    } else if (len < MAX_LINE) {
                        line[len++] = c;
                    } else {
                        overlong = true;
                    }
                }
            }
        } catch (IOException e) {
            // closed, or QEMU went away
        } finally {
            closed = true;
            lines.poll(); // room for the mark, should the queue be full
            lines.offer(GONE); // wakes a command waiting for its answer
        }
    }

    /** Put on the queue when the port closed; compared by identity, never a line the guest sent. */
    @SuppressWarnings("StringOperationCanBeSimplified")
    private static final String GONE = new String("(port closed)");

    private static String token() {
        byte[] b = new byte[8];
        TOKENS.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /** Whether the connection is gone. */
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        closed = true;
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing to release beyond the descriptor
        }
    }
}
