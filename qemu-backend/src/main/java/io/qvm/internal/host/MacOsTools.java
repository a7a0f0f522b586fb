package io.qvm.internal.host;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The macOS programs qvm runs, by absolute path: a JVM started by an IDE or by launchd has a
 * PATH without {@code /usr/sbin} (often just {@code /usr/bin:/bin}), so {@code sysctl} by name is
 * "not found" there. These paths are where macOS itself installs the tools (they are part of the
 * sealed system volume, so a user cannot move them). Untested on a real Mac: proven here with a
 * {@link CommandRunner} that checks the argv and replays recorded outputs.
 */
public final class MacOsTools {

    /** {@code sysctl(8)}: kernel state ({@code kern.hv_support}, {@code sysctl.proc_translated}, {@code kern.uuid}). */
    public static final String SYSCTL = "/usr/sbin/sysctl";
    /** {@code ioreg(8)}: the I/O Registry ({@code IOPlatformUUID}). */
    public static final String IOREG = "/usr/sbin/ioreg";
    /** {@code id(1)}: a user's uid and gid, from Directory Services as well as {@code /etc/passwd}. */
    public static final String ID = "/usr/bin/id";
    /** {@code dscl(1)}: Directory Services' command line. */
    public static final String DSCL = "/usr/bin/dscl";
    /** {@code perl(1)}: ships with macOS; qvm uses it only for POSIX {@code setsid()} (there is no {@code setsid(1)}). */
    public static final String PERL = "/usr/bin/perl";

    private static final Duration DEADLINE = Duration.ofSeconds(5);

    private MacOsTools() {
    }

    /**
     * {@code /usr/sbin/sysctl -n <name>}, stripped; empty when the name does not exist on this
     * kernel (sysctl exits non-zero, e.g. {@code sysctl.proc_translated} on an Intel Mac before
     * macOS 11), when sysctl cannot run, or when it prints nothing.
     */
    public static Optional<String> sysctl(CommandRunner runner, String name) {
        try {
            CommandRunner.Result r = runner.run(List.of(SYSCTL, "-n", name), DEADLINE);
            String out = r.stdout().strip();
            return r.ok() && !out.isEmpty() ? Optional.of(out) : Optional.empty();
        } catch (UncheckedIOException e) {
            return Optional.empty();
        }
    }
}
