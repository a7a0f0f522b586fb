package io.qvm.protocol.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
@Tag("security")
class ControlCharsTest {

    @Test
    void escapesC0DelAndC1() {
        assertEquals("a\\x1b[2Jb\\x00\\x7f\\x9b\\x85", ControlChars.escape("a\u001b[2Jb\u0000\u007f\u009b\u0085"));
    }

    @Test
    void escapesNewlineTabAndCrUnlessKeptOrDropped() {
        assertEquals("a\\x09b\\x0d\\x0a", ControlChars.escape("a\tb\r\n"));
        assertEquals("a\tb\n", ControlChars.escape("a\tb\r\n", "\n\t", "\r"));
        assertEquals("a\tb\\x0a", ControlChars.escape("a\tb\r\n", "\t", "\r"));
    }

    @Test
    void leavesPrintableTextAloneIncludingNonAscii() {
        String s = "plain ASCII, café, 日本, \u00a0nbsp, emoji \uD83D\uDE00";
        assertEquals(s, ControlChars.escape(s));
    }

    @Test
    void keepAndDropNameOnlyControlCharacters() {
        assertEquals("xy", ControlChars.escape("xy", "", "x"), "a printable character is never dropped");
    }

    @Test
    void controlRangesAreExactlyC0DelC1() {
        assertTrue(ControlChars.isControl(0x00));
        assertTrue(ControlChars.isControl(0x1f));
        assertFalse(ControlChars.isControl(0x20));
        assertFalse(ControlChars.isControl(0x7e));
        assertTrue(ControlChars.isControl(0x7f));
        assertTrue(ControlChars.isControl(0x80));
        assertTrue(ControlChars.isControl(0x9f));
        assertFalse(ControlChars.isControl(0xa0));
    }

    @Test
    void bidiControlsLineSeparatorsAndLoneSurrogatesAreEscapedVisibly() {
        String trojan = "access" + (char) 0x202E + "nimda" + (char) 0x2066 + "x" + (char) 0x2069 + (char) 0x200F;
        assertEquals("access<U+202E>nimda<U+2066>x<U+2069><U+200F>", ControlChars.escape(trojan));
        for (int cp : new int[] {0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067,
                0x2068, 0x2069, 0x2028, 0x2029}) {
            assertEquals(String.format("<U+%04X>", cp), ControlChars.escape(Character.toString(cp)));
        }
        assertEquals("a<U+D800>b", ControlChars.escape("a" + (char) 0xD800 + "b"), "an unpaired surrogate");
        String emoji = new String(Character.toChars(0x1F600));
        assertEquals("ok " + emoji, ControlChars.escape("ok " + emoji), "a paired surrogate is a character");
    }

    @Test
    void guestTextEscapesNewlinesAndCapsTheLengthWithANote() {
        assertEquals("line1\\x0aFAKE LOG LINE\\x1b[31m", ControlChars.guestText("line1\nFAKE LOG LINE\u001b[31m", 100));
        String capped = ControlChars.guestText("x".repeat(65_536), ControlChars.SHORT_TEXT);
        assertEquals("x".repeat(128) + "… (65536 characters in all)", capped);
        assertEquals("", ControlChars.guestText(null, 10));
        assertEquals("exact", ControlChars.guestText("exact", 5), "no note when nothing was cut");
    }

    @Test
    void theCapNeverCutsAnEscapeOrASurrogatePairInHalf() {
        String cut = ControlChars.guestText("ab" + (char) 0x1b + "cd", 4);
        assertEquals("ab… (5 characters in all)", cut, "\\x1b is four characters: it does not fit after ab");
        String emoji = new String(Character.toChars(0x1F600));
        assertEquals("a… (3 characters in all)", ControlChars.guestText("a" + emoji, 2));
        String bidi = ControlChars.guestText("x".repeat(10) + (char) 0x202E, 12);
        assertEquals("x".repeat(10) + "… (11 characters in all)", bidi);
    }

    @Test
    void guestTextRefusesANonPositiveCap() {
        assertThrows(IllegalArgumentException.class, () -> ControlChars.guestText("x", 0));
    }
}
