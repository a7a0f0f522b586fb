package io.qvm.cli;

import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * A {@code qvm up} session limit ({@code --idle-timeout}, {@code --max-lifetime}): a number and a
 * unit — {@code 90s}, {@code 30m}, {@code 2h}, {@code 1d} — from one second to 365 days, or
 * {@code off} (empty: no limit).
 */
final class SessionLimit {

    private static final Pattern FORM = Pattern.compile("(\\d{1,9})([smhd])");
    static final Duration MAX = Duration.ofDays(365);

    private SessionLimit() {
    }

    /** @throws ParameterException (exit 2) naming the option, the value and the accepted forms */
    static Optional<Duration> parse(CommandLine cl, String option, String text) {
        String t = text == null ? "" : text.strip().toLowerCase(Locale.ROOT);
        if (t.equals("off")) {
            return Optional.empty();
        }
        Matcher m = FORM.matcher(t);
        if (!m.matches()) {
            throw new ParameterException(cl, option + " '" + text + "' is not a duration: give a number and a unit "
                    + "(90s, 30m, 2h, 1d) or off");
        }
        long n = Long.parseLong(m.group(1));
        Duration d = switch (m.group(2)) {
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
        };
        if (d.isZero() || d.compareTo(MAX) > 0) {
            throw new ParameterException(cl, option + " " + text + " is out of range: 1s to 365d, or off");
        }
        return Optional.of(d);
    }

    /** {@code 1d}, {@code 2h}, {@code 30m}, {@code 90s}: the largest unit that divides it. */
    static String format(Duration d) {
        long s = d.toSeconds();
        if (s % 86400 == 0) {
            return s / 86400 + "d";
        }
        if (s % 3600 == 0) {
            return s / 3600 + "h";
        }
        if (s % 60 == 0) {
            return s / 60 + "m";
        }
        return s + "s";
    }
}
