package io.qvm.protocol.util;

/**
 * Text from an untrusted source (the guest: its console, its worker's READY and ERROR frames;
 * QEMU's output; a QMP peer) made safe to print on a terminal or into a log: every character that
 * could steer the display becomes a visible escape, and {@link #guestText} also caps the length.
 *
 * <p>Escaped: C0 (below U+0020, with ESC, CR and LF), DEL and C1 (U+0080 to U+009F, with CSI),
 * which carry a terminal's escape sequences and forge log lines, as {@code \xNN}; the Unicode
 * bidirectional controls (U+061C, U+200E, U+200F, the embeddings and overrides U+202A to U+202E
 * and the isolates U+2066 to U+2069), which make text display in another order than it reads
 * ("Trojan Source"), the line and paragraph separators U+2028 and U+2029, and unpaired
 * surrogates, as {@code <U+NNNN>}. Everything else, non-ASCII letters included, stays as it is.
 * The caller of {@link #escape(String, String, String)} names the few control characters it keeps
 * and those it drops.
 *
 * <pre>{@code
 * ControlChars.escape("a" + (char) 0x1b + "[2Jb")   // a\x1b[2Jb
 * ControlChars.escape("a\tb\r\n", "\n\t", "\r")   // a\tb\n (tab and newline kept, CR dropped)
 * ControlChars.escape("abc" + (char) 0x202E + "fed") // abc<U+202E>fed
 * ControlChars.guestText("x".repeat(500), 128)     // 128 x, then "… (500 characters in all)"
 * }</pre>
 */
public final class ControlChars {

    /** Cap for a short guest-supplied name: the worker's version, one capability. */
    public static final int SHORT_TEXT = 128;
    /** Cap for a guest-supplied sentence: a worker's error message, the init's error line. */
    public static final int MESSAGE_TEXT = 4096;

    private ControlChars() {
    }

    /** True for C0 (below U+0020), DEL (U+007F) and C1 (U+0080 to U+009F). */
    public static boolean isControl(int cp) {
        return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
    }

    /**
     * True for the Unicode controls that reorder or break text without being C0/C1: the bidi
     * marks, embeddings, overrides and isolates, the line and paragraph separators, and a
     * surrogate on its own (a code point iteration yields one only when it is unpaired).
     */
    public static boolean isFormatting(int cp) {
        return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e)
                || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029
                || (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE);
    }

    /** {@code text} with every control and formatting character escaped. */
    public static String escape(String text) {
        return escape(text, "", "");
    }

    /**
     * {@code text} with its control and formatting characters escaped, except the control
     * characters in {@code keep} (left as they are) and those in {@code drop} (left out).
     */
    public static String escape(String text, String keep, String drop) {
        return escape(text, keep, drop, Integer.MAX_VALUE);
    }

    /**
     * Guest-supplied text as it may be shown: escaped like {@link #escape(String)} (newlines
     * too: one guest string is one line) and cut after {@code maxChars} characters of output,
     * with a note of the original length. {@code null} is the empty string.
     */
    public static String guestText(String text, int maxChars) {
        if (maxChars < 1) {
            throw new IllegalArgumentException("maxChars must be positive, was " + maxChars);
        }
        return text == null ? "" : escape(text, "", "", maxChars);
    }

    private static String escape(String text, String keep, String drop, int maxChars) {
        StringBuilder out = new StringBuilder(Math.min(text.length(), maxChars) + 32);
        int i = 0;
        while (i < text.length()) {
            int cp = text.codePointAt(i);
            String piece;
            if (isControl(cp)) {
                piece = keep.indexOf(cp) >= 0 ? Character.toString(cp)
                        : drop.indexOf(cp) >= 0 ? "" : String.format("\\x%02x", cp);
            } else if (isFormatting(cp)) {
                piece = String.format("<U+%04X>", cp);
            } else {
                piece = Character.toString(cp);
            }
            if (out.length() + piece.length() > maxChars) { // never half an escape or a surrogate pair
                return out.append("… (").append(text.length()).append(" characters in all)").toString();
            }
            out.append(piece);
            i += Character.charCount(cp);
        }
        return out.toString();
    }
}
