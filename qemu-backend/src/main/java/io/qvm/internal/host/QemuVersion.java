package io.qvm.internal.host;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A QEMU release, {@code major.minor.micro}, ordered numerically.
 *
 * @param major e.g. 7
 * @param minor e.g. 2
 * @param micro e.g. 22 (Debian's {@code 7.2.22} is a stable-branch micro release)
 */
public record QemuVersion(int major, int minor, int micro) implements Comparable<QemuVersion> {

    private static final Pattern VERSION = Pattern.compile("QEMU emulator version (\\d+)\\.(\\d+)(?:\\.(\\d+))?");

    public QemuVersion {
        if (major < 0 || minor < 0 || micro < 0) {
            throw new IllegalArgumentException("negative QEMU version component: " + major + "." + minor + "." + micro);
        }
    }

    /**
     * Parses the first line of {@code qemu-system-* --version}, e.g.
     * {@code QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)}.
     *
     * @throws IllegalArgumentException when the text holds no version (the message quotes it)
     */
    public static QemuVersion parse(String versionOutput) {
        Matcher m = VERSION.matcher(versionOutput == null ? "" : versionOutput);
        if (!m.find()) {
            throw new IllegalArgumentException("no 'QEMU emulator version X.Y.Z' in: " + abbreviate(versionOutput));
        }
        return new QemuVersion(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                m.group(3) == null ? 0 : Integer.parseInt(m.group(3)));
    }

    /** Parses {@code "7.2.0"} or {@code "7.2"}. */
    public static QemuVersion of(String dotted) {
        return parse("QEMU emulator version " + dotted);
    }

    /** True when this version is {@code major.minor.0} or later. */
    public boolean atLeast(int major, int minor) {
        return compareTo(new QemuVersion(major, minor, 0)) >= 0;
    }

    @Override
    public int compareTo(QemuVersion o) {
        int c = Integer.compare(major, o.major);
        if (c == 0) {
            c = Integer.compare(minor, o.minor);
        }
        return c != 0 ? c : Integer.compare(micro, o.micro);
    }

    @Override
    public String toString() {
        return major + "." + minor + "." + micro;
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "(nothing)";
        }
        String t = s.strip();
        return t.length() > 200 ? t.substring(0, 200) + "…" : "'" + t + "'";
    }
}
