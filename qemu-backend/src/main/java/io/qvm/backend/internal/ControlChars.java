package io.qvm.backend.internal;

/**
 * Text from an untrusted source (a guest's console, QEMU's output, a QMP peer) made safe to
 * print: every control character (C0, DEL and C1, which carry a terminal's escape sequences)
 * becomes {@code \xNN}. The caller names the few it keeps as they are and those it drops.
 *
 * <pre>{@code
 * ControlChars.escape("a\u001b[2Jb")            // a\x1b[2Jb
 * ControlChars.escape("a\tb\r\n", "\n\t", "\r") // a\tb\n  (tab and newline kept, CR dropped)
 * }</pre>
 */
public final class ControlChars {

    private ControlChars() {
    }

    /** True for C0 (below U+0020), DEL (U+007F) and C1 (U+0080 to U+009F). */
    public static boolean isControl(int cp) {
        return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
    }

    /** {@code text} with every control character as {@code \xNN}. */
    public static String escape(String text) {
        return escape(text, "", "");
    }

    /**
     * {@code text} with its control characters as {@code \xNN}, except those in {@code keep}
     * (left as they are) and those in {@code drop} (left out).
     */
    public static String escape(String text, String keep, String drop) {
        StringBuilder out = new StringBuilder(text.length());
        text.codePoints().forEach(cp -> {
            if (!isControl(cp) || keep.indexOf(cp) >= 0) {
                out.appendCodePoint(cp);
            } else if (drop.indexOf(cp) < 0) {
                out.append(String.format("\\x%02x", cp));
            }
        });
        return out.toString();
    }
}
