package io.qvm.protocol.image;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one-line markers the guest init prints on the console, and their parser for the host
 * ({@code ConsoleWatcher}); the init's {@code /init} is generated from these words (see
 * {@code io.qvm.image.InitScript}). docs/CONTRACTS.md describes them:
 *
 * <pre>
 * qvm: phase=&lt;name&gt; uptime=&lt;seconds&gt;                  a boot phase and the guest's uptime
 * qvm: phase=worker-exit status=&lt;n&gt; uptime=&lt;seconds&gt;   the worker ended
 * qvm: error=&lt;text&gt;                                   the init failed (it then powers off)
 * </pre>
 */
public final class ConsoleMarkers {

    /** What every marker starts with. */
    public static final String PREFIX = "qvm: ";
    /** A phase marker, up to the phase's name. */
    public static final String PHASE = PREFIX + "phase=";
    /** An error marker, up to the text. */
    public static final String ERROR = PREFIX + "error=";
    /** The field before the guest's uptime in seconds. */
    public static final String UPTIME = "uptime=";
    /** The field before the worker's exit status ({@link Phase#WORKER_EXIT}). */
    public static final String STATUS = "status=";

    private static final Pattern PHASE_NAME = Pattern.compile(Pattern.quote(PHASE) + "([A-Za-z0-9_.-]+)");
    private static final Pattern UPTIME_VALUE = Pattern.compile(Pattern.quote(UPTIME) + "([0-9]+(?:\\.[0-9]+)?)");
    private static final Pattern STATUS_VALUE = Pattern.compile(Pattern.quote(STATUS) + "(-?[0-9]+)");
    private static final Pattern ERROR_TEXT = Pattern.compile(Pattern.quote(ERROR) + "(.*)$");

    /** The phases the init prints, in the order it prints them. */
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
        /** About to start runsc. */
        RUNSC("runsc"),
        /** The worker ended; the marker carries {@link #STATUS}. */
        WORKER_EXIT("worker-exit"),
        /** About to power off. */
        POWEROFF("poweroff");

        private final String id;

        Phase(String id) {
            this.id = id;
        }

        /** The name in the marker. */
        public String id() {
            return id;
        }
    }

    /**
     * One marker read from the console.
     *
     * @param phase the phase's name (any name the line has, known or not), if a phase marker
     * @param uptime the guest's uptime in seconds as printed, if present
     * @param status the worker's exit status, if present on a {@link Phase#WORKER_EXIT} marker
     * @param error the error text (stripped), if an error marker
     */
    public record Marker(Optional<String> phase, Optional<String> uptime, Optional<Integer> status,
            Optional<String> error) {
    }

    private ConsoleMarkers() {
    }

    /** The marker in {@code line} (it may follow other output on the line), if it has one. */
    public static Optional<Marker> parse(String line) {
        int at = line.indexOf(PREFIX);
        if (at < 0) {
            return Optional.empty();
        }
        String s = line.substring(at);
        Matcher err = ERROR_TEXT.matcher(s);
        if (err.find()) {
            return Optional.of(new Marker(Optional.empty(), Optional.empty(), Optional.empty(),
                    Optional.of(err.group(1).strip())));
        }
        Matcher m = PHASE_NAME.matcher(s);
        if (!m.find()) {
            return Optional.empty();
        }
        String name = m.group(1);
        Matcher up = UPTIME_VALUE.matcher(s);
        Optional<String> uptime = up.find() ? Optional.of(up.group(1)) : Optional.empty();
        Optional<Integer> status = Optional.empty();
        if (name.equals(Phase.WORKER_EXIT.id())) {
            Matcher st = STATUS_VALUE.matcher(s);
            if (st.find()) {
                status = Optional.of(Integer.parseInt(st.group(1)));
            }
        }
        return Optional.of(new Marker(Optional.of(name), uptime, status, Optional.empty()));
    }
}
