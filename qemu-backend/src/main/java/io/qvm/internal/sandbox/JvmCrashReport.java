package io.qvm.internal.sandbox;

import io.qvm.protocol.util.ControlChars;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The summary of a worker JVM's fatal-error report on the guest console: the worker runs with
 * {@code -XX:+ErrorFileToStderr}, so a native crash prints HotSpot's whole report there, and its
 * first lines say what happened ({@code SIGSEGV (0xb) at pc=…}, the JRE, the problematic frame).
 * This finds the last such report in the console's final {@value #SCAN_BYTES} bytes and returns
 * those lines, escaped and capped: the guest wrote them, and they go into an exception message.
 */
public final class JvmCrashReport {

    /** How much of the console's end is searched. */
    public static final int SCAN_BYTES = 1 << 20;
    /** The line HotSpot starts its report with. */
    public static final String BANNER = "# A fatal error has been detected by the Java Runtime Environment:";
    /** How {@link #clause} begins, for those that read it back from a message. */
    public static final String CLAUSE = "the worker's JVM crashed (";
    private static final int MAX_LINES = 12;
    private static final int MAX_LINE_CHARS = 200;

    private JvmCrashReport() {
    }

    /** The report's summary lines (those starting with {@code #}, blank ones dropped), if the console has one. */
    public static Optional<List<String>> find(Path console) {
        String text;
        try (RandomAccessFile f = new RandomAccessFile(console.toFile(), "r")) {
            long from = Math.max(0, f.length() - SCAN_BYTES);
            byte[] b = new byte[(int) (f.length() - from)];
            f.seek(from);
            f.readFully(b);
            text = new String(b, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return Optional.empty();
        }
        int at = text.lastIndexOf(BANNER);
        if (at < 0) {
            return Optional.empty();
        }
        List<String> lines = new ArrayList<>();
        for (String line : text.substring(at).split("\n", 64)) {
            if (!line.startsWith("#")) {
                break;
            }
            String l = line.substring(1).strip();
            if (!l.isEmpty() && lines.size() < MAX_LINES) {
                lines.add(ControlChars.guestText(l, MAX_LINE_CHARS));
            }
        }
        return Optional.of(List.copyOf(lines));
    }

    /** The summary as one clause for a message ({@code "; the worker's JVM crashed (… | …)"}), or "". */
    public static String clause(Path console) {
        return find(console).map(l -> "; " + CLAUSE + String.join(" | ", l) + ")").orElse("");
    }
}
