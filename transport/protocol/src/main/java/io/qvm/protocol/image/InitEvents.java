package io.qvm.protocol.image;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one-line events the guest init writes on its own virtio-serial port
 * ({@link KernelCommandLine#EVENTS_PORT}), and their strict parser for the host. The init's
 * {@code /init} is generated from these words (see {@code io.qvm.image.InitScript}).
 * docs/CONTRACTS.md describes them:
 *
 * <pre>
 * qvm: phase=&lt;name&gt; uptime=&lt;seconds&gt;                  a boot phase and the guest's uptime
 * qvm: phase=worker-exit status=&lt;n&gt; uptime=&lt;seconds&gt;   the worker ended (n: 0..255)
 * qvm: phase=archive bytes=&lt;n&gt; uptime=&lt;seconds&gt;       the class archive (n bytes) was written to its port
 * qvm: error=&lt;text&gt;                                   the init failed (it then powers off)
 * </pre>
 *
 * <p>Only the init holds that port open: runsc, the sandboxed worker and the stdio relays never
 * get its descriptor, so nothing the worker does can write an event. The init echoes the same
 * lines on the console for people, but the host reads no event from the console, which the worker
 * can write. The parser takes a whole line or nothing: a known phase with its exact fields, or an
 * error. Order and uniqueness are the reader's part ({@code GuestWatcher}).
 */
public final class InitEvents {

    /** What every event starts with. */
    public static final String PREFIX = "qvm: ";
    /** A phase event, up to the phase's name. */
    public static final String PHASE = PREFIX + "phase=";
    /** An error event, up to the text. */
    public static final String ERROR = PREFIX + "error=";
    /** The field before the guest's uptime in seconds. */
    public static final String UPTIME = "uptime=";
    /** The field before the worker's exit status ({@link Phase#WORKER_EXIT}). */
    public static final String STATUS = "status=";
    /** The field before the class archive's size in bytes ({@link Phase#ARCHIVE}). */
    public static final String BYTES = "bytes=";
    /**
     * The most of runsc's and the worker's stderr (together) the init passes on to the console in
     * one boot; the rest is dropped in the guest.
     */
    public static final int SANDBOX_STDERR_MAX_BYTES = 4 * 1024 * 1024;
    /**
     * The console's cap on the host: the sandbox's stderr above plus room for the kernel's and the
     * init's lines. A console past it means a guest that does not follow the contract.
     */
    public static final int CONSOLE_MAX_BYTES = SANDBOX_STDERR_MAX_BYTES + 4 * 1024 * 1024;
    /** The longest event line the host reads; longer lines are not events. */
    public static final int MAX_LINE = 1024;

    /** Uptime: up to 9 digits of seconds (31 years), up to 9 decimals. */
    private static final String UPTIME_RE = Pattern.quote(UPTIME) + "([0-9]{1,9}(?:\\.[0-9]{1,9})?)";
    private static final Pattern PHASE_LINE = Pattern.compile(Pattern.quote(PHASE) + "([a-z-]{1,32}) " + UPTIME_RE);
    private static final Pattern EXIT_LINE = Pattern.compile(Pattern.quote(PHASE + Phase.WORKER_EXIT.id() + " ")
            + Pattern.quote(STATUS) + "([0-9]{1,3}) " + UPTIME_RE);
    private static final Pattern ARCHIVE_LINE = Pattern.compile(Pattern.quote(PHASE + Phase.ARCHIVE.id() + " ")
            + Pattern.quote(BYTES) + "([0-9]{1,12}) " + UPTIME_RE);
    private static final Pattern ERROR_LINE = Pattern.compile(Pattern.quote(ERROR) + "(.*)");

    /** The phases the init reports, in the order it reports them. */
    public enum Phase {
        /** The init started. */
        INIT("init"),
        /** The kernel modules are loaded. */
        MODULES("modules"),
        /** Re-rooted so that runsc can pivot_root. */
        ROOTFS("rootfs"),
        /** The worker's port was found and opened. */
        PORT("port"),
        /** The control port was found and opened (only when there is one). */
        CONTROL("control"),
        /**
         * Making the worker's class archive ({@code qvm.class_archive=make}): only in a boot the
         * host asked for one.
         */
        ARCHIVE_MAKE("archive-make"),
        /** The class archive is made and written to its port; the event carries {@link #BYTES}. */
        ARCHIVE("archive"),
        /** Making the class archive failed (the console says why); the boot goes on without one. */
        ARCHIVE_FAILED("archive-failed"),
        /** About to start runsc. */
        RUNSC("runsc"),
        /** The worker ended; the event carries {@link #STATUS}. */
        WORKER_EXIT("worker-exit"),
        /** About to power off. */
        POWEROFF("poweroff");

        private final String id;

        Phase(String id) {
            this.id = id;
        }

        /** The name in the event. */
        public String id() {
            return id;
        }

        /** The phase named {@code id}, if the contract has one. */
        public static Optional<Phase> of(String id) {
            for (Phase p : values()) {
                if (p.id.equals(id)) {
                    return Optional.of(p);
                }
            }
            return Optional.empty();
        }
    }

    /**
     * One event.
     *
     * @param phase the phase, if a phase event
     * @param uptimeNanos the guest's uptime at the event in nanoseconds, with a phase
     * @param status the worker's exit status (0..255), only on {@link Phase#WORKER_EXIT}
     * @param error the error text exactly as written (the reader sanitises it), if an error event
     * @param bytes the class archive's size, only on {@link Phase#ARCHIVE}
     */
    public record Event(Optional<Phase> phase, long uptimeNanos, Optional<Integer> status, Optional<String> error,
            Optional<Long> bytes) {
    }

    private InitEvents() {
    }

    /**
     * The event that {@code line} is, or empty when it is not exactly one: an unknown phase, a
     * missing or malformed field, trailing text, a status outside 0..255, an archive size of more
     * than 12 digits, or a line longer than
     * {@link #MAX_LINE}.
     */
    public static Optional<Event> parse(String line) {
        if (line.length() > MAX_LINE) {
            return Optional.empty();
        }
        Matcher err = ERROR_LINE.matcher(line);
        if (err.matches()) {
            return Optional.of(new Event(Optional.empty(), 0, Optional.empty(), Optional.of(err.group(1).strip()),
                    Optional.empty()));
        }
        Matcher exit = EXIT_LINE.matcher(line);
        if (exit.matches()) {
            int status = Integer.parseInt(exit.group(1));
            if (status > 255) {
                return Optional.empty();
            }
            return Optional.of(new Event(Optional.of(Phase.WORKER_EXIT), nanos(exit.group(2)), Optional.of(status),
                    Optional.empty(), Optional.empty()));
        }
        Matcher archive = ARCHIVE_LINE.matcher(line);
        if (archive.matches()) {
            return Optional.of(new Event(Optional.of(Phase.ARCHIVE), nanos(archive.group(2)), Optional.empty(),
                    Optional.empty(), Optional.of(Long.parseLong(archive.group(1)))));
        }
        Matcher m = PHASE_LINE.matcher(line);
        if (!m.matches()) {
            return Optional.empty();
        }
        Optional<Phase> phase = Phase.of(m.group(1)).filter(p -> p != Phase.WORKER_EXIT && p != Phase.ARCHIVE);
        return phase.map(p -> new Event(Optional.of(p), nanos(m.group(2)), Optional.empty(), Optional.empty(),
                Optional.empty()));
    }

    /** Seconds with up to 9 decimals, exactly, as nanoseconds. */
    private static long nanos(String seconds) {
        int dot = seconds.indexOf('.');
        if (dot < 0) {
            return Long.parseLong(seconds) * 1_000_000_000L;
        }
        String frac = (seconds.substring(dot + 1) + "000000000").substring(0, 9);
        return Long.parseLong(seconds.substring(0, dot)) * 1_000_000_000L + Long.parseLong(frac);
    }
}
