package io.qvm.backend.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
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
}
