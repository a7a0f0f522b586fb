package io.qvm.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;

/**
 * The message decoders of {@link Messages} on frames as the frame readers deliver them (any kind,
 * any header that is a JSON object, any body): the worker's decodes of the host's requests
 * ({@link Messages#hello}, {@link Messages#renderRequest}) and the host's decodes of the worker's
 * answers ({@link Messages#ready}, {@link Messages#renderResult(Frame)}, {@link Messages#errorReply},
 * {@link Messages#workerStatus}). Each either refuses with {@link IllegalArgumentException} or
 * returns a value that keeps the contract's types and ranges (docs/CONTRACTS.md, the records'
 * Javadoc) and decodes to itself again after {@code Messages.toFrame}. Nothing else escapes.
 */
@Tag("unit")
@Tag("fuzz")
@Tag("security")
class MessagesFuzzTest {

    private static final FrameKind[] KINDS = {FrameKind.HELLO, FrameKind.RENDER, FrameKind.READY,
        FrameKind.RENDER_RESULT, FrameKind.ERROR, FrameKind.STATUS_REPLY};
    private static final byte[] PNG_SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    private static final Set<String> RENDER_FIELDS = Set.of("type", "width", "height", "dpi", "page", "background");
    private static final Pattern BACKGROUND = Pattern.compile("#[0-9A-Fa-f]{6}([0-9A-Fa-f]{2})?|transparent");
    private static final Pattern HEX_32 = Pattern.compile("[0-9A-Fa-f]{32}");

    @FuzzTest(maxDuration = "10s")
    void aDecodedMessageKeepsTheContractAndSurvivesItsOwnEncoding(FuzzedDataProvider data) {
        FrameKind kind = data.consumeInt(0, 7) == 0 ? data.pickValue(FrameKind.values()) : data.pickValue(KINDS);
        long id = data.consumeLong();
        ObjectNode header;
        try {
            header = FrameCodec.decodeHeader(id, JsonHeaders.header(data, kind, 4096));
        } catch (FrameCorruptException e) {
            return; // the frame readers refuse it before any decoder sees it
        }
        byte[] rest = data.consumeRemainingAsBytes();
        byte[] body = rest.length > 0 && (rest[0] & 1) == 0 ? RawFrames.concat(PNG_SIGNATURE, rest) : rest;
        Frame f = new Frame(kind, id, header, body);

        Hello hello = decoded(Messages::hello, f);
        if (hello != null) {
            assertTrue(header.get("nonce").isTextual() && !hello.nonce().isEmpty(), "the nonce is a string: " + header);
            if (header.has("protocol")) {
                JsonNode p = header.get("protocol");
                assertTrue(p.isIntegralNumber() && p.canConvertToInt() && p.intValue() == hello.protocol(),
                        "the protocol is a 32-bit integer: " + header);
            }
            assertEquals(hello, Messages.hello(Messages.toFrame(hello)), "HELLO survives its own encoding");
        }

        RenderRequest render = decoded(Messages::renderRequest, f);
        if (render != null) {
            header.fieldNames().forEachRemaining(n -> assertTrue(RENDER_FIELDS.contains(n), "unknown field " + n));
            if (header.has("background")) {
                assertTrue(BACKGROUND.matcher(header.get("background").asText()).matches(),
                        "background is #RRGGBB, #RRGGBBAA or transparent: " + header.get("background"));
            }
            for (String field : new String[] {"width", "height", "dpi", "page"}) {
                if (header.has(field)) {
                    assertTrue(header.get(field).isIntegralNumber(), field + " is an integer: " + header);
                }
            }
            assertEquals(render, Messages.renderRequest(Messages.toFrame(render, id)), "RENDER survives its encoding");
        }

        RenderResult result = decoded(Messages::renderResult, f);
        if (result != null) {
            assertEquals(result, Messages.renderResult(Messages.toFrame(result, id)), "a result survives its encoding");
        }

        Ready ready = decoded(Messages::ready, f);
        if (ready != null) {
            assertNotNull(ready.nonce());
            assertNotNull(ready.version());
            ready.capabilities().forEach(c -> assertNotNull(c));
        }

        ErrorReply error = decoded(Messages::errorReply, f);
        if (error != null) {
            assertEquals(id, error.requestId());
            assertNotNull(error.code());
            assertNotNull(error.message());
        }

        WorkerStatus status = decoded(Messages::workerStatus, f);
        if (status != null) {
            assertTrue(HEX_32.matcher(status.random()).matches(), "random is 16 bytes in hex: " + status.random());
            assertEquals(status, Messages.workerStatus(Messages.toFrame(status, id)), "a status survives its encoding");
        }
    }

    /** What {@code decoder} makes of {@code f}, or null if it refuses it in the documented way. */
    private static <T> T decoded(Function<Frame, T> decoder, Frame f) {
        try {
            return decoder.apply(f);
        } catch (IllegalArgumentException e) {
            assertNotNull(e.getMessage(), "a refusal says why");
            return null;
        }
    }
}
