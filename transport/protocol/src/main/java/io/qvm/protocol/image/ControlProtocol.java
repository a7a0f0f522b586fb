package io.qvm.protocol.image;

import java.util.regex.Pattern;

/**
 * The words of the guest init's control port ({@link KernelCommandLine#CONTROL_PORT}): one ASCII
 * line each way, answered by the init outside the sandbox (docs/CONTRACTS.md). The host's end is
 * {@code GuestControl}; the init's shell loop is generated from these words (see
 * {@code io.qvm.image.InitScript}).
 *
 * <pre>
 *   host → init   restore &lt;epochSeconds&gt; &lt;token&gt; [&lt;seed&gt;]   set the wall clock; with a seed
 *                 (64 hex digits), mix it into the guest kernel's input pool (RNDADDENTROPY) and
 *                 reseed its CRNG (RNDRESEEDCRNG); where the machine has a vmgenid device, wait
 *                 for the kernel's own reseed too
 *   init → host   restored &lt;token&gt; clock=&lt;s&gt; forks=&lt;n&gt; reseeded=&lt;0|1&gt;
 *                 (an init of an image without {@code crng_reseed} answers without reseeded=)
 *   host → init   setclock &lt;epochSeconds&gt; &lt;token&gt;       set the wall clock only (a paused
 *                 sandbox resumed: its randomness is its own already)
 *   init → host   clockset &lt;token&gt; clock=&lt;s&gt;
 *   host → init   step &lt;micros&gt; &lt;token&gt;             step the wall clock by a signed number of
 *                 microseconds (0: only read it), read and set in one process, so however late the
 *                 command arrives the step is exact
 *   init → host   stepped &lt;token&gt; clock=&lt;s&gt;.&lt;us&gt;   the clock right after the step
 *   host → init   ping &lt;token&gt;                        channel check
 *   init → host   pong &lt;token&gt;
 *   init → host   error &lt;token|-&gt; bad-command|unknown-command|step-failed
 * </pre>
 *
 * <p>{@code restore} and {@code setclock} set whole seconds, and the guest is behind by however
 * long the command took to reach the init (a second and more on a loaded host, right after a
 * resume); the host then measures the offset and steps it away with {@code step} (GuestControl's
 * syncClock).
 */
public final class ControlProtocol {

    public static final String RESTORE = "restore";
    public static final String RESTORED = "restored";
    public static final String SET_CLOCK = "setclock";
    public static final String CLOCK_SET = "clockset";
    public static final String STEP = "step";
    public static final String STEPPED = "stepped";
    public static final String PING = "ping";
    public static final String PONG = "pong";
    public static final String ERROR = "error";
    /** The field of {@link #RESTORED} before the guest's clock (epoch seconds). */
    public static final String CLOCK = "clock=";
    /** The field of {@link #RESTORED} before the number of vmgenid reseeds the guest kernel logged. */
    public static final String FORKS = "forks=";
    /** The field of {@link #RESTORED} that says whether the init reseeded the CRNG from the host's seed (1) or not (0). */
    public static final String RESEEDED = "reseeded=";
    /** The bytes of the seed the host sends with {@link #RESTORE} (the CRNG's key size). */
    public static final int SEED_BYTES = 32;
    /** The seed in lower-case hex: this many digits. */
    public static final int SEED_HEX_DIGITS = 2 * SEED_BYTES;
    /** In an {@link #ERROR} answer when the line had no valid token. */
    public static final String NO_TOKEN = "-";
    /** Error reason: a known command with bad arguments, an empty line, or a line too long. */
    public static final String BAD_COMMAND = "bad-command";
    /** Error reason: anything else. */
    public static final String UNKNOWN_COMMAND = "unknown-command";
    /** Error reason: the init could not read or set the clock for a {@link #STEP}. */
    public static final String STEP_FAILED = "step-failed";
    /** Error reason: the init could not set or read the clock for a {@link #RESTORE} (the clone is refused). */
    public static final String RESTORE_FAILED = "restore-failed";
    /** The most digits of a {@link #STEP}'s microseconds, its sign aside (10^15 us: 31 years). */
    public static final int MAX_STEP_DIGITS = 15;
    /** The longest token ({@code [A-Za-z0-9]}). */
    public static final int MAX_TOKEN = 64;
    /** The longest line the init accepts (characters); a longer one is a {@link #BAD_COMMAND}. */
    public static final int MAX_COMMAND = 200;
    /** A token as a regular expression. */
    public static final String TOKEN = "[A-Za-z0-9]{1," + MAX_TOKEN + "}";

    private ControlProtocol() {
    }

    /** The init's answer to {@link #RESTORE}: groups token, clock, forks, reseeded (null from an older init). */
    public static Pattern restoredPattern() {
        return Pattern.compile(RESTORED + " (" + TOKEN + ") " + CLOCK + "(\\d{1,18}) " + FORKS + "(\\d{1,9})(?: "
                + RESEEDED + "([01]))?");
    }

    /** The init's answer to {@link #SET_CLOCK}: groups token, clock. */
    public static Pattern clockSetPattern() {
        return Pattern.compile(CLOCK_SET + " (" + TOKEN + ") " + CLOCK + "(\\d{1,18})");
    }

    /** The init's answer to {@link #STEP}: groups token, seconds, microseconds (six digits). */
    public static Pattern steppedPattern() {
        return Pattern.compile(STEPPED + " (" + TOKEN + ") " + CLOCK + "(\\d{1,12})\\.(\\d{6})");
    }

    /** The init's answer to {@link #PING}: group token. */
    public static Pattern pongPattern() {
        return Pattern.compile(PONG + " (" + TOKEN + ")");
    }

    /** An error answer: groups token (or {@link #NO_TOKEN}), reason. */
    public static Pattern errorPattern() {
        return Pattern.compile(ERROR + " (" + TOKEN + "|" + NO_TOKEN + ") ([a-z-]{1,40})");
    }
}
