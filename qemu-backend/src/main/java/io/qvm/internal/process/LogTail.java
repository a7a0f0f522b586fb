package io.qvm.internal.process;

import io.qvm.protocol.util.ControlChars;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The last bytes of a log file (QEMU's stderr, the guest console), made safe to put into an
 * exception message: at most {@code maxBytes} are read, however big the file; invalid UTF-8
 * becomes U+FFFD; control characters other than newline and tab (e.g. the escape sequences a
 * hostile guest may print) are shown as {@code \xNN}; a cut-off first line is dropped.
 *
 * <pre>{@code
 * String console = LogTail.tail(state.consoleLog(), 4096);
 * }</pre>
 */
public final class LogTail {

    private LogTail() {}

    /**
     * The sanitised tail of {@code file}; {@code "(no file)"} if it does not exist and
     * {@code "(unreadable: ...)"} if reading fails — never throws for I/O, since it is used while
     * reporting another failure.
     */
    public static String tail(Path file, int maxBytes) {
        return tail(file, 0, maxBytes);
    }

    /**
     * As {@link #tail(Path, int)}, but nothing before byte {@code from} of the file: the evidence
     * of one request is what the guest wrote while that request ran, never what an earlier
     * request's document made it print.
     */
    public static String tail(Path file, long from, int maxBytes) {
        if (from < 0) {
            throw new IllegalArgumentException("from must not be negative, got " + from);
        }
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be positive, got " + maxBytes);
        }
        if (file == null) {
            return "(no file)";
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            long start = Math.max(Math.min(from, size), size - maxBytes);
            ByteBuffer buf = ByteBuffer.allocate((int) (size - start));
            while (buf.hasRemaining() && ch.read(buf, start + buf.position()) > 0) {
                // read until full or end of file (the file may shrink meanwhile)
            }
            buf.flip();
            String text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPLACE)
                    .onUnmappableCharacter(CodingErrorAction.REPLACE)
                    .decode(buf)
                    .toString();
            if (start > 0 && start > from) {
                int nl = text.indexOf('\n');
                text = "[... " + (start - from) + " earlier bytes omitted]\n" + (nl >= 0 ? text.substring(nl + 1) : text);
            }
            return ControlChars.escape(text, "\n\t", "\r"); // CRLF consoles: the CR goes
        } catch (NoSuchFileException e) {
            return "(no file " + file + ")";
        } catch (IOException e) {
            return "(unreadable " + file + ": " + e + ")";
        }
    }
}
