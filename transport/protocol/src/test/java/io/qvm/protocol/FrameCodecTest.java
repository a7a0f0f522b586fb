package io.qvm.protocol;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameCorruptException;
import io.qvm.protocol.FrameException;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class FrameCodecTest {

    private static final FrameLimits LIMITS = FrameLimits.ofBody(1 << 20);

    @Test
    void prefixHasTheDocumentedLayout() throws Exception {
        ObjectNode h = JsonNodeFactory.instance.objectNode().put("a", 1);
        byte[] all = FrameCodec.encode(new Frame(FrameKind.ECHO, 0x0102030405060708L, h, new byte[] {9, 8, 7}), LIMITS);
        ByteBuffer b = ByteBuffer.wrap(all);
        byte[] header = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
        assertEquals(0x51564D46, b.getInt(0), "magic QVMF");
        assertEquals(1, b.get(4), "version");
        assertEquals(0x10, b.get(5), "kind ECHO");
        assertEquals(0, b.getShort(6), "flags");
        assertEquals(0x0102030405060708L, b.getLong(8), "request id, big-endian");
        assertEquals(header.length, b.getInt(16), "header length");
        assertEquals(3, b.getInt(20), "body length");
        CRC32C crc = new CRC32C();
        crc.update(all, 0, 24);
        assertEquals((int) crc.getValue(), b.getInt(24), "CRC-32C of bytes 0..23");
        assertEquals(28 + header.length + 3, all.length);
        assertArrayEquals(header, java.util.Arrays.copyOfRange(all, 28, 28 + header.length));
    }

    @Test
    void emptyHeaderIsWrittenAsZeroBytesAndReadAsEmptyObject() throws Exception {
        byte[] all = FrameCodec.encode(Frame.of(FrameKind.GOODBYE, 3, (byte[]) null), LIMITS);
        assertEquals(FrameCodec.PREFIX_BYTES, all.length);
        assertTrue(FrameCodec.decodeHeader(3, new byte[0]).isEmpty());
    }

    @Test
    void decodePrefixIgnoresTheBuffersByteOrder() throws Exception {
        byte[] all = FrameCodec.encode(Frame.of(FrameKind.ECHO, 77, new byte[5]), LIMITS);
        ByteBuffer little = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        FrameCodec.Prefix p = FrameCodec.decodePrefix(little, 0);
        assertNotNull(p);
        assertEquals(77, p.requestId());
        assertEquals(5, p.bodyLength());
        assertTrue(FrameCodec.isMagicAt(little, 0));
    }

    @Test
    void decodePrefixRefusesBadMagicAndBadChecksum() throws Exception {
        byte[] all = FrameCodec.encode(Frame.of(FrameKind.ECHO, 1, new byte[5]), LIMITS);
        byte[] badMagic = all.clone();
        badMagic[3] = 'G';
        assertNull(FrameCodec.decodePrefix(ByteBuffer.wrap(badMagic), 0));
        for (int i = 4; i < 28; i++) {
            byte[] flipped = all.clone();
            flipped[i] ^= 0x01;
            assertNull(FrameCodec.decodePrefix(ByteBuffer.wrap(flipped), 0), "a flipped bit at offset " + i);
        }
    }

    @Test
    void validateNamesEachFailure() {
        FrameException version = assertThrows(FrameCorruptException.class,
                () -> FrameCodec.validate(prefix(2, 0x10, 0, 5, 0, 0), LIMITS));
        assertTrue(version.getMessage().contains("protocol version 2"), version.getMessage());
        FrameException flags = assertThrows(FrameCorruptException.class,
                () -> FrameCodec.validate(prefix(1, 0x10, 0x8000, 5, 0, 0), LIMITS));
        assertTrue(flags.getMessage().contains("reserved flags 0x8000"), flags.getMessage());
        FrameException kind = assertThrows(FrameCorruptException.class,
                () -> FrameCodec.validate(prefix(1, 0x55, 0, 5, 0, 0), LIMITS));
        assertTrue(kind.getMessage().contains("unknown kind 0x55"), kind.getMessage());
        FrameTooLargeException header = assertThrows(FrameTooLargeException.class,
                () -> FrameCodec.validate(prefix(1, 0x10, 0, 5, LIMITS.maxHeaderBytes() + 1L, 0), LIMITS));
        assertEquals("header", header.getMessage().split(" ")[5]);
        FrameTooLargeException body = assertThrows(FrameTooLargeException.class,
                () -> FrameCodec.validate(prefix(1, 0x10, 0, 5, 0, 0xFFFF_FFFFL), LIMITS));
        assertEquals(0xFFFF_FFFFL, body.declaredBytes(), "lengths are unsigned");
        assertEquals(5, body.requestId());
        assertEquals(FrameKind.ECHO, body.kind());
    }

    @Test
    void headersMustBeOneStrictJsonObject() {
        for (String bad : new String[] {"not json", "[1,2]", "\"s\"", "42", "{} {}", "{\"a\":1,\"a\":2}", "{",
                " "}) {
            FrameCorruptException e = assertThrows(FrameCorruptException.class,
                    () -> FrameCodec.decodeHeader(8, bad.getBytes(StandardCharsets.UTF_8)), bad);
            assertEquals(8, e.requestId());
            assertTrue(!e.getMessage().contains(bad.trim()) || bad.isBlank(), "never echoes input: " + e.getMessage());
        }
    }

    @Test
    void encoderRefusesWhatThePeerWouldRefuse() {
        FrameLimits small = new FrameLimits(16, 10);
        assertThrows(FrameTooLargeException.class, () -> FrameCodec.encode(Frame.of(FrameKind.ECHO, 1, new byte[11]), small));
        ObjectNode big = JsonNodeFactory.instance.objectNode().put("k", "x".repeat(20));
        FrameTooLargeException e = assertThrows(FrameTooLargeException.class,
                () -> FrameCodec.encode(Frame.of(FrameKind.ECHO, 1, big), small));
        assertTrue(e.getMessage().contains("header"), e.getMessage());
    }

    @Test
    void limitsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> new FrameLimits(-1, 0));
        assertThrows(IllegalArgumentException.class, () -> new FrameLimits(FrameLimits.HEADER_CEILING + 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new FrameLimits(0, FrameLimits.BODY_CEILING + 1));
    }

    @Test
    void replyKindsPairEveryRequest() {
        assertEquals(FrameKind.ECHO_REPLY, FrameKind.ECHO.replyKind());
        assertEquals(FrameKind.RENDER_RESULT, FrameKind.RENDER.replyKind());
        assertEquals(FrameKind.GOODBYE, FrameKind.GOODBYE.replyKind());
        assertNull(FrameKind.HELLO.replyKind());
        assertNull(FrameKind.ERROR.replyKind());
        for (FrameKind k : FrameKind.values()) {
            assertEquals(k, FrameKind.fromCode(k.code()));
        }
        assertNull(FrameKind.fromCode(0x00));
    }

    @Test
    void handshakeMessagesRoundTrip() {
        Limits limits = new Limits(1 << 20, 2 << 20, 4_000_000, 4096, 10, 30_000);
        Hello hello = Hello.fresh(limits);
        assertEquals(32, hello.nonce().length());
        assertEquals(hello, Messages.hello(Messages.toFrame(hello)));
        assertTrue(!hello.nonce().equals(Hello.fresh(limits).nonce()), "fresh nonces");
        Ready ready = new Ready(hello.nonce(), "1.2.3", java.util.List.of("echo", "svg"));
        assertEquals(ready, Messages.ready(Messages.toFrame(ready)));
        ErrorReply err = new ErrorReply(4, ErrorCode.TOO_LARGE, "too big");
        assertEquals(err, Messages.errorReply(Messages.toFrame(err)));
        assertEquals(ErrorCode.INTERNAL, ErrorCode.parse("NO_SUCH_CODE"));
    }

    private static FrameCodec.Prefix prefix(int version, int kind, int flags, long id, long h, long b) {
        return FrameCodec.decodePrefix(ByteBuffer.wrap(RawFrames.prefix(version, kind, flags, id, h, b)), 0);
    }
}
