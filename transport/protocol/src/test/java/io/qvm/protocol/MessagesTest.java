package io.qvm.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link RenderRequest}, {@link RenderResult}, {@link Hello}, {@link WorkerStatus}: round trips and header
 * validation; the guest's text escaped and capped.
 */
@Tag("unit")
@Tag("security")
class MessagesTest {

    private static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0};

    @Test
    void requestRoundTrip() {
        RenderRequest r = RenderRequest.pdf(new byte[] {1, 2, 3}).withDpi(150).withPage(2).withBackground("#11223344");
        RenderRequest back = Messages.renderRequest(Messages.toFrame(r, 9));
        assertEquals(r, back);
        assertEquals("#11223344", RenderRequest.formatBackground(back.backgroundArgb()));
        RenderRequest s = RenderRequest.svg(new byte[] {4}).withSize(640, 0).withBackground("transparent");
        assertEquals(s, Messages.renderRequest(Messages.toFrame(s, 10)));
        assertEquals(0xFFFFFFFF, RenderRequest.parseBackground("#FFFFFF"));
    }

    @Test
    void requestHeaderValidation() {
        bad("type", h -> h.put("type", "png"));
        bad("type", h -> h.remove("type"));
        bad("type", h -> h.put("type", 3));
        bad("width", h -> h.put("width", -1));
        bad("width", h -> h.put("width", 1.5));
        bad("width", h -> h.put("width", "100"));
        bad("height", h -> h.put("height", RenderRequest.MAX_SIDE + 1));
        bad("dpi", h -> h.put("dpi", -1));
        bad("dpi", h -> h.put("dpi", RenderRequest.MAX_DPI + 1));
        bad("dpi", h -> h.put("dpi", 100).put("width", 100));
        bad("page", h -> h.put("page", 0));
        bad("page", h -> h.put("page", 2)); // SVG has one page
        bad("page", h -> h.put("page", 5_000_000_000L));
        bad("background", h -> h.put("background", "red"));
        bad("background", h -> h.put("background", "#12345"));
        bad("background", h -> h.put("background", "#ZZ0000"));
        bad("background", h -> h.put("background", "#\uFF26\uFF26\uFF26\uFF26\uFF26\uFF26")); // fullwidth F: not ASCII hex
        bad("background", h -> h.put("background", 255));
        bad("unknown header field", h -> h.put("script", "x"));
    }

    @Test
    void requestHeaderBoundsAreAccepted() {
        assertEquals(1, decode(h -> h.put("dpi", 1)).dpi());
        assertEquals(RenderRequest.MAX_DPI, decode(h -> h.put("dpi", RenderRequest.MAX_DPI)).dpi());
        assertEquals(RenderRequest.MAX_SIDE, decode(h -> h.put("width", RenderRequest.MAX_SIDE)).width());
        assertEquals(RenderRequest.MAX_SIDE, decode(h -> h.put("height", RenderRequest.MAX_SIDE)).height());
    }

    /**
     * The wire says 1..max for width, height and dpi: a field that is present must be in range,
     * and an explicit 0 is refused like any other value below it (the encoder leaves a field out
     * for "not given"; the record's 0 never travels).
     */
    @Test
    void anExplicitZeroIsRefused() {
        bad("dpi", h -> h.put("dpi", 0));
        bad("width", h -> h.put("width", 0));
        bad("height", h -> h.put("height", 0).put("width", 10));
        assertEquals(RenderRequest.svg(new byte[0]), decode(h -> { }), "absent fields are not given");
    }

    /** The request with a header of {@code type: svg} edited by {@code edit}, decoded. */
    private static RenderRequest decode(java.util.function.Consumer<ObjectNode> edit) {
        ObjectNode h = JsonNodeFactory.instance.objectNode().put("type", "svg");
        edit.accept(h);
        return Messages.renderRequest(new Frame(FrameKind.RENDER, 1, h, new byte[0]));
    }

    /** The edited header is refused, for a reason that names {@code says}, without echoing the input. */
    private static void bad(String says, java.util.function.Consumer<ObjectNode> edit) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> decode(edit), says);
        assertTrue(e.getMessage().contains(says), "refused for another reason than " + says + ": " + e.getMessage());
        assertFalse(e.getMessage().contains("ZZ") || e.getMessage().contains("red"), "no input echoed");
    }

    @Test
    void resultRoundTripAndValidation() {
        RenderResult r = new RenderResult(PNG, 3, 4, 5);
        assertEquals(r, Messages.renderResult(Messages.toFrame(r, 1)));
        assertEquals(PNG.length, r.outputBytes());
        Frame f = Messages.toFrame(r, 1);
        f.header().put("outputBytes", 3);
        assertThrows(IllegalArgumentException.class, () -> Messages.renderResult(f));
        assertThrows(IllegalArgumentException.class, () -> new RenderResult(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}, 1, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new RenderResult(PNG, 0, 1, 0));
        Frame noFormat = Messages.toFrame(r, 2);
        noFormat.header().remove("format");
        assertThrows(IllegalArgumentException.class, () -> Messages.renderResult(noFormat));
    }

    // ---- guest text ---------------------------------------------------------------------------

    /** What a compromised worker would put in a string: terminal escapes, forged lines, bidi. */
    private static final String HOSTILE = "ok\u001b]0;pwned\u0007\u001b[2J\r\n2026-01-01 INFO forged line"
            + "\u202Egnp.exe\u2066\u0085\u009b31m";
    private static final String HOSTILE_ESCAPED = "ok\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\x0a2026-01-01 INFO forged line"
            + "<U+202E>gnp.exe<U+2066>\\x85\\x9b31m";

    @Test
    void readyVersionAndCapabilitiesAreEscapedAndCapped() {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("nonce", "n1");
        h.put("version", HOSTILE);
        var caps = h.putArray("capabilities");
        caps.add(HOSTILE);
        caps.add("x".repeat(60_000));
        Ready r = Messages.ready(Frame.of(FrameKind.READY, 0, h));
        assertEquals("n1", r.nonce());
        assertEquals(HOSTILE_ESCAPED, r.version());
        assertEquals(HOSTILE_ESCAPED, r.capabilities().get(0));
        assertEquals("x".repeat(128) + "… (60000 characters in all)", r.capabilities().get(1));
        h.put("version", "v".repeat(65_000));
        assertEquals("v".repeat(128) + "… (65000 characters in all)", Messages.ready(Frame.of(FrameKind.READY, 0, h)).version());
    }

    @Test
    void readyKeepsAtMostThirtyTwoCapabilities() {
        ObjectNode h = JsonNodeFactory.instance.objectNode();
        h.put("nonce", "n1");
        h.put("version", "v");
        var caps = h.putArray("capabilities");
        for (int i = 0; i < 20_000; i++) {
            caps.add("c" + i);
        }
        Ready r = Messages.ready(Frame.of(FrameKind.READY, 0, h));
        assertEquals(Messages.MAX_CAPABILITIES + 1, r.capabilities().size());
        assertEquals("c31", r.capabilities().get(31));
        assertEquals("… (20000 capabilities in all)", r.capabilities().get(32));
    }

    @Test
    void errorMessagesAreEscapedAndCappedAtFourKibibytes() {
        ErrorReply e = Messages.errorReply(Messages.toFrame(new ErrorReply(7, ErrorCode.PARSE_ERROR, HOSTILE)));
        assertEquals(HOSTILE_ESCAPED, e.message());
        assertEquals(ErrorCode.PARSE_ERROR, e.code());
        String big = "E".repeat(64 * 1024 - 100);
        String capped = Messages.errorReply(Messages.toFrame(new ErrorReply(8, ErrorCode.INTERNAL, big))).message();
        assertEquals("E".repeat(4096) + "… (" + big.length() + " characters in all)", capped);
        assertEquals("plain message, café", Messages.errorReply(Messages.toFrame(
                new ErrorReply(9, ErrorCode.INTERNAL, "plain message, café"))).message(), "ordinary text is untouched");
    }

    /**
     * HELLO's fields have their types: a nonce that is not a string, or a protocol that is not an
     * integer, is refused rather than read as text or rounded (found by {@code MessagesFuzzTest}:
     * {@code "nonce": 21920} was accepted as the nonce "21920").
     */
    @Test
    void aHelloWithAMistypedFieldIsRefused() {
        Hello hello = new Hello("abc", FrameCodec.VERSION, new Limits(1 << 20, 1 << 20, 1 << 20, 1024, 1, 1000));
        assertEquals(hello, Messages.hello(Messages.toFrame(hello)));
        for (java.util.function.Consumer<ObjectNode> edit : List.<java.util.function.Consumer<ObjectNode>>of(
                h -> h.put("nonce", 21920), h -> h.put("nonce", true), h -> h.putObject("nonce"), h -> h.put("nonce", ""),
                h -> h.remove("nonce"), h -> h.put("protocol", "1"), h -> h.put("protocol", 1.0),
                h -> h.put("protocol", true), h -> h.put("protocol", 1L << 32))) {
            Frame f = Messages.toFrame(hello);
            edit.accept(f.header());
            assertThrows(IllegalArgumentException.class, () -> Messages.hello(f), f.header().toString());
        }
        Frame noProtocol = Messages.toFrame(hello);
        noProtocol.header().remove("protocol");
        assertEquals(-1, Messages.hello(noProtocol).protocol(), "no protocol reads as one no worker speaks");
    }

    /** A STATUS_REPLY's random bytes are ASCII hex (found by {@code MessagesFuzzTest}: fullwidth digits passed). */
    @Test
    void aStatusWithNonAsciiHexIsRefused() {
        WorkerStatus s = WorkerStatus.of(1, new byte[WorkerStatus.RANDOM_BYTES], 2, 3);
        assertEquals(s, Messages.workerStatus(Messages.toFrame(s, 4)));
        Frame f = Messages.toFrame(s, 4);
        f.header().put("random", "\uFF10\uFF10" + s.random().substring(2));
        assertThrows(IllegalArgumentException.class, () -> Messages.workerStatus(f));
    }
}
