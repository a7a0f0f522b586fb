package io.qvm.protocol;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.fasterxml.jackson.databind.node.TextNode;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Frame headers written from fuzzer input, as text: mostly JSON objects of the fields the
 * messages know (so a fuzzer reaches the decoders' deeper checks at once), with values of every
 * JSON type, numbers at the edges of the ranges, and sometimes raw bytes that are not JSON at all.
 * Written by hand rather than through Jackson so that what no encoder writes — duplicate keys,
 * {@code 1e2}, {@code 2147483648}, {@code -0} — reaches the readers too (fuzz tests only).
 */
public final class JsonHeaders {

    /** Every header field a message of the contract has, and a few near misses. */
    public static final List<String> KEYS = List.of("type", "width", "height", "dpi", "page", "background",
            "replyBytes", "nonce", "protocol", "limits", "maxRequestBytes", "maxResponseBytes", "maxPixels",
            "maxSide", "maxPages", "requestTimeoutMillis", "code", "message", "format", "outputBytes", "renderMillis",
            "version", "capabilities", "wallClockMillis", "random", "requestsServed", "sessions", "Type", "");

    /** Strings the decoders compare against, and their neighbours. */
    public static final List<String> WORDS = List.of("svg", "pdf", "png", "SVG", "#FFFFFF", "#ffffff", "#00000080",
            "#12345", "#1234567", "#GGGGGG", "transparent", "TOO_LARGE", "PARSE_ERROR", "BAD_REQUEST", "nope",
            "00112233445566778899aabbccddeeff", "0011223344556677889900aabbccddeeff", "", " ", "\u0000", "1",
            // digits that Character.digit reads as hex but that are not ASCII: fullwidth, Arabic-Indic
            "#\uFF26\uFF26\uFF26\uFF26\uFF26\uFF26", "#\u0661\u0662\u0663\u0664\u0665\u0666",
            "\uFF10\uFF10112233445566778899aabbccddeeff");

    /** Number literals at the edges of the fields' ranges, as JSON text. */
    public static final List<String> NUMBERS = List.of("0", "1", "-1", "2", "-0", "1.0", "1.5", "1e2", "1E400", "96",
            "2400", "2401", "65536", "65537", "2147483647", "2147483648", "-2147483649", "4294967296",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1048576", "0.0000001");

    private JsonHeaders() {
    }

    /** The fields of each message's header, by kind, in the order the contract lists them. */
    private static final Map<FrameKind, List<String>> SCHEMAS = Map.of(
            FrameKind.HELLO, List.of("nonce", "protocol", "limits"),
            FrameKind.READY, List.of("nonce", "version", "capabilities"),
            FrameKind.ECHO, List.of("replyBytes"),
            FrameKind.RENDER, List.of("type", "width", "height", "dpi", "page", "background"),
            FrameKind.RENDER_RESULT, List.of("format", "width", "height", "renderMillis", "outputBytes"),
            FrameKind.STATUS_REPLY, List.of("wallClockMillis", "random", "requestsServed", "sessions"),
            FrameKind.ERROR, List.of("code", "message"));
    private static final List<String> LIMITS = List.of("maxRequestBytes", "maxResponseBytes", "maxPixels", "maxSide",
            "maxPages", "requestTimeoutMillis");
    private static final Set<String> TEXT_FIELDS = Set.of("nonce", "version", "type", "background", "format", "code",
            "message", "random");

    /**
     * A header's bytes: empty (the format's {@code {}}), raw bytes, any JSON object of known
     * fields, or — most often — the header of a {@code kind} message with its fields mostly
     * present and mostly of their types (so that a decoder's later checks are reached at once).
     *
     * @param kind the frame's kind, or null for none the contract has
     * @param maxBytes about the most to produce (raw headers; objects stay well below it)
     */
    public static byte[] header(FuzzedDataProvider data, FrameKind kind, int maxBytes) {
        String json;
        switch (data.consumeInt(0, 6)) {
            case 0:
                return new byte[0];
            case 1:
                return data.consumeBytes(data.consumeInt(0, maxBytes));
            case 2:
                json = object(data, 0);
                break;
            default:
                json = message(data, kind);
        }
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        return bytes.length <= maxBytes ? bytes : "{}".getBytes(StandardCharsets.UTF_8);
    }

    /** A header shaped like {@code kind}'s: each field usually there and usually well typed, sometimes one more. */
    public static String message(FuzzedDataProvider data, FrameKind kind) {
        List<String> fields = kind == null ? List.of() : SCHEMAS.getOrDefault(kind, List.of());
        StringBuilder out = new StringBuilder("{");
        for (String field : fields) {
            if (data.consumeInt(0, 7) != 0) {
                out.append(out.length() > 1 ? "," : "").append(TextNode.valueOf(field)).append(':')
                        .append(typed(data, field));
            }
        }
        if (data.consumeInt(0, 7) == 0) {
            String extra = data.pickValue(KEYS);
            if (!fields.contains(extra)) {
                out.append(out.length() > 1 ? "," : "").append(TextNode.valueOf(extra)).append(':')
                        .append(value(data, 1));
            }
        }
        return out.append('}').toString();
    }

    /** A value for {@code field}: mostly of its type and near its range, sometimes anything. */
    private static String typed(FuzzedDataProvider data, String field) {
        if (data.consumeInt(0, 5) == 0) {
            return value(data, 1);
        }
        switch (field) {
            case "limits": {
                StringBuilder out = new StringBuilder("{");
                for (String limit : LIMITS) {
                    if (data.consumeInt(0, 15) != 0) {
                        out.append(out.length() > 1 ? "," : "").append(TextNode.valueOf(limit)).append(':')
                                .append(data.consumeInt(0, 3) == 0 ? data.pickValue(NUMBERS)
                                        : Long.toString(data.consumeLong(1, 1L << 31)));
                    }
                }
                return out.append('}').toString();
            }
            case "capabilities": {
                StringBuilder out = new StringBuilder("[");
                int n = data.consumeInt(0, 5);
                for (int i = 0; i < n; i++) {
                    out.append(i > 0 ? "," : "").append(TextNode.valueOf(data.consumeString(20)));
                }
                return out.append(']').toString();
            }
            case "random":
                return data.consumeBoolean() ? TextNode.valueOf(data.pickValue(WORDS)).toString()
                        : "\"" + String.format("%016x%016x", data.consumeLong(), data.consumeLong()) + "\"";
            case "protocol":
                return data.consumeInt(0, 3) == 0 ? data.pickValue(NUMBERS) : Integer.toString(data.consumeInt(0, 2));
            default:
                if (TEXT_FIELDS.contains(field)) {
                    return TextNode.valueOf(data.consumeBoolean() ? data.pickValue(WORDS) : data.consumeString(40))
                            .toString();
                }
                return data.consumeBoolean() ? data.pickValue(NUMBERS) : Integer.toString(data.consumeInt(-1, 70_000));
        }
    }

    /**
     * A JSON object (as text) of up to eight fields, mostly with known names, each name once (the
     * readers refuse a name given twice, which the raw headers cover).
     */
    public static String object(FuzzedDataProvider data, int depth) {
        StringBuilder out = new StringBuilder("{");
        Set<String> keys = new HashSet<>();
        int fields = data.consumeInt(0, 8);
        for (int i = 0; i < fields; i++) {
            String key = data.consumeInt(0, 7) == 0 ? data.consumeString(12) : data.pickValue(KEYS);
            if (keys.add(key)) {
                out.append(keys.size() > 1 ? "," : "").append(TextNode.valueOf(key)).append(':')
                        .append(value(data, depth + 1));
            }
        }
        return out.append('}').toString();
    }

    /** One JSON value of any type. */
    public static String value(FuzzedDataProvider data, int depth) {
        switch (data.consumeInt(0, depth < 3 ? 10 : 8)) {
            case 0:
                return "null";
            case 1:
                return data.consumeBoolean() ? "true" : "false";
            case 2:
                return data.pickValue(NUMBERS);
            case 3:
                return Integer.toString(data.consumeInt(-2, 70_000));
            case 4:
                return Long.toString(data.consumeLong());
            case 5:
                return TextNode.valueOf(data.pickValue(WORDS)).toString();
            case 6:
                return TextNode.valueOf(data.consumeString(40)).toString();
            case 7:
                return "\"#" + Integer.toHexString(data.consumeInt()) + "\"";
            case 8:
                return Double.toString(data.consumeRegularDouble());
            case 9: {
                StringBuilder a = new StringBuilder("[");
                int n = data.consumeInt(0, 4);
                for (int i = 0; i < n; i++) {
                    a.append(i > 0 ? "," : "").append(value(data, depth + 1));
                }
                return a.append(']').toString();
            }
            default:
                return object(data, depth);
        }
    }
}
