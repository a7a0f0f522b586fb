package io.qvm.internal.qmp;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.Arrays;

/**
 * Splits a QMP byte stream into lines, with a hard cap on line length checked before the line
 * buffer grows. QMP frames every message as one JSON document followed by a line end:
 *
 * <pre>
 * +------------------------- at most maxLineBytes -------------------------+
 * | {"return": {"status": "running", "running": true}, "id": "qvm-2"}       | \r? \n
 * +--------------------------------------------------------------------------+
 * </pre>
 *
 * The line end ({@code \n}, optionally preceded by {@code \r}) is not part of the line. A line
 * longer than the cap is a {@link QmpProtocolException}; nothing beyond the cap is buffered.
 * Not thread-safe: one reader thread owns it.
 */
final class QmpLineReader {

    private final ReadableByteChannel channel;
    private final int maxLineBytes;
    private final ByteBuffer chunk;
    private byte[] line = new byte[256];
    private int lineLength;

    QmpLineReader(ReadableByteChannel channel, int maxLineBytes) {
        if (maxLineBytes < 64) {
            throw new IllegalArgumentException("maxLineBytes must be >= 64, got " + maxLineBytes);
        }
        this.channel = channel;
        this.maxLineBytes = maxLineBytes;
        this.chunk = ByteBuffer.allocate(8192);
        this.chunk.flip(); // empty, ready to read from
    }

    /**
     * The next line without its line end.
     *
     * @throws EOFException at end of stream (a partial last line is dropped — QEMU ends every
     *     message with a line end, so a partial line is a truncated message)
     * @throws QmpProtocolException if a line exceeds the cap
     */
    byte[] next() throws IOException, QmpProtocolException {
        while (true) {
            while (chunk.hasRemaining()) {
                byte b = chunk.get();
                if (b == '\n') {
                    int end = lineLength;
                    if (end > 0 && line[end - 1] == '\r') {
                        end--;
                    }
                    byte[] out = Arrays.copyOf(line, end);
                    lineLength = 0;
                    return out;
                }
                append(b);
            }
            chunk.clear();
            int n = channel.read(chunk);
            chunk.flip();
            if (n < 0) {
                throw new EOFException(lineLength == 0
                        ? "end of stream"
                        : "end of stream inside a line (" + lineLength + " bytes dropped)");
            }
        }
    }

    private void append(byte b) throws QmpProtocolException {
        if (lineLength == maxLineBytes) {
            throw failOnLineTooLong();
        }
        if (lineLength == line.length) {
            line = Arrays.copyOf(line, Math.min(maxLineBytes, line.length * 2));
        }
        line[lineLength++] = b;
    }

    private QmpProtocolException failOnLineTooLong() {
        String head = QmpClient.excerpt(line, Math.min(lineLength, 80));
        lineLength = 0;
        return new QmpProtocolException("QMP line longer than the limit of " + maxLineBytes
                + " bytes (no line end within the limit)", head, null);
    }
}
