package io.qvm.server.internal;

import io.netty.channel.Channel;
import io.netty.util.AttributeKey;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One connection's place in its request cycle, touched only on its event loop:
 *
 * <pre>
 *   IDLE --first byte--> HEAD --headers decoded--> BODY --body complete--> BUSY --answer written--> IDLE
 *     (idle timeout:       (header timeout:          (read timeout:          (reads paused: one
 *      closed quietly)      408, closed)              408, closed)            request at a time)
 *   any phase --refused from its headers, or a limit crossed--> CLOSING (the rest is discarded)
 * </pre>
 */
final class Conn {

    static final AttributeKey<Conn> KEY = AttributeKey.valueOf("qvm.serve.conn");

    enum Phase { IDLE, HEAD, BODY, BUSY, CLOSING }

    final Channel channel;
    Phase phase = Phase.IDLE;
    /** When the current request's first byte came. */
    long startNanos;
    String requestId = "";
    String endpoint = "other";
    String tenant = "";
    boolean keepAlive;
    /** Bytes of the body budget this request holds (HttpService's), given back with its answer. */
    long reservedBytes;
    private ScheduledFuture<?> timer;

    Conn(Channel channel) {
        this.channel = channel;
    }

    static Conn of(Channel ch) {
        return ch.attr(KEY).get();
    }

    /** A new request began (its first byte). */
    void begin() {
        phase = Phase.HEAD;
        startNanos = System.nanoTime();
        byte[] id = new byte[8];
        ThreadLocalRandom.current().nextBytes(id);
        requestId = HexFormat.of().formatHex(id);
        endpoint = "other";
        tenant = "";
        keepAlive = false;
    }

    /** Runs {@code onFire} after {@code after} unless the phase changed or the timer was re-armed. */
    void arm(Duration after, Runnable onFire) {
        disarm();
        Phase armedIn = phase;
        timer = channel.eventLoop().schedule(() -> {
            if (phase == armedIn && channel.isActive()) {
                onFire.run();
            }
        }, after.toNanos(), TimeUnit.NANOSECONDS);
    }

    void disarm() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }
}
