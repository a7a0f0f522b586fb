package io.qvm.internal.process;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads who a pid is: its command line and start instant. Used to decide whether a pid is still
 * the process we recorded, or a stranger that got the same number.
 */
final class ProcessIdentity {

    /** Start instants computed by two JVMs may differ by rounding; a pid is not reused that fast. */
    static final Duration START_TOLERANCE = Duration.ofSeconds(1);
    private static final int MAX_CMDLINE_BYTES = 256 * 1024;

    private ProcessIdentity() {}

    /**
     * The full argv (argv[0] first) of {@code h}: from {@code /proc/<pid>/cmdline} on Linux, else
     * from {@link ProcessHandle.Info}. Empty if the OS will not tell us (e.g. another user's process).
     */
    static Optional<List<String>> commandLine(ProcessHandle h) {
        Path proc = Path.of("/proc", Long.toString(h.pid()), "cmdline");
        if (Files.isDirectory(Path.of("/proc/self"))) {
            try (InputStream in = Files.newInputStream(proc)) {
                byte[] bytes = in.readNBytes(MAX_CMDLINE_BYTES);
                List<String> argv = new ArrayList<>();
                int start = 0;
                for (int i = 0; i < bytes.length; i++) {
                    if (bytes[i] == 0) {
                        argv.add(new String(bytes, start, i - start, StandardCharsets.UTF_8));
                        start = i + 1;
                    }
                }
                if (start < bytes.length) {
                    argv.add(new String(bytes, start, bytes.length - start, StandardCharsets.UTF_8));
                }
                return argv.isEmpty() ? Optional.empty() : Optional.of(argv); // empty: zombie or kernel thread
            } catch (IOException e) {
                return Optional.empty();
            }
        }
        ProcessHandle.Info info = h.info();
        return fromInfo(info.command(), info.arguments());
    }

    /**
     * The argv that {@link ProcessHandle.Info}'s command and arguments give, where there is no
     * {@code /proc}: unknown unless both are known. On Windows the JDK never gives the arguments;
     * the command alone is no command line (taking it for one made a live QEMU look like a
     * stranger whose arguments name no sandbox).
     */
    static Optional<List<String>> fromInfo(Optional<String> command, Optional<String[]> arguments) {
        if (command.isEmpty() || arguments.isEmpty()) {
            return Optional.empty();
        }
        List<String> argv = new ArrayList<>();
        argv.add(command.get());
        arguments.ifPresent(a -> argv.addAll(List.of(a)));
        return Optional.of(argv);
    }

    /**
     * False only if both instants are known and differ by more than {@link #START_TOLERANCE}
     * (unknown counts as a match). The cautious answer for "is the owner still alive?" only;
     * before a pid is signalled, {@link #startProven} is the test.
     */
    static boolean startMatches(ProcessHandle h, Instant recorded) {
        if (recorded == null) {
            return true;
        }
        Optional<Instant> actual = h.info().startInstant();
        return actual.isEmpty() || Duration.between(recorded, actual.get()).abs().compareTo(START_TOLERANCE) <= 0;
    }

    /**
     * True only if {@code recorded} is known, {@code h}'s start instant can be read, and they agree
     * within {@link #START_TOLERANCE}: the proof a pid is still the process that was recorded,
     * required before it is signalled (unknown is no proof).
     */
    static boolean startProven(ProcessHandle h, Instant recorded) {
        if (recorded == null) {
            return false;
        }
        Optional<Instant> actual = h.info().startInstant();
        return actual.isPresent() && Duration.between(recorded, actual.get()).abs().compareTo(START_TOLERANCE) <= 0;
    }

    /** Whether two start instants of a process agree within {@link #START_TOLERANCE}. */
    static boolean sameStart(Instant recorded, Instant actual) {
        return Duration.between(recorded, actual).abs().compareTo(START_TOLERANCE) <= 0;
    }

    /** True only if both instants are known and differ by more than {@link #START_TOLERANCE}. */
    static boolean startDiffers(ProcessHandle h, Instant recorded) {
        return !startMatches(h, recorded);
    }

    /**
     * Whether two executable paths, as the OS reported them at different times, name the same
     * file: equal; equal but for case where either is a Windows path (drive letter or
     * backslash: NTFS names are case-insensitive); or the same file on this file system.
     */
    static boolean sameExecutable(String recorded, String actual) {
        if (recorded.equals(actual)) {
            return true;
        }
        if ((windowsPath(recorded) || windowsPath(actual)) && recorded.equalsIgnoreCase(actual)) {
            return true;
        }
        try {
            return Files.isSameFile(Path.of(recorded), Path.of(actual));
        } catch (IOException | RuntimeException e) {
            return false; // not both on this file system, or one is gone: no proof
        }
    }

    private static boolean windowsPath(String p) {
        return p.indexOf('\\') >= 0 || p.length() >= 2 && Character.isLetter(p.charAt(0)) && p.charAt(1) == ':';
    }

    /** The last path element of a command, e.g. {@code qemu-system-x86_64}. */
    static String baseName(String command) {
        int slash = Math.max(command.lastIndexOf('/'), command.lastIndexOf('\\'));
        return command.substring(slash + 1);
    }
}
