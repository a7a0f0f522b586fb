package io.qvm.internal.process;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Writes to a file until {@code maxBytes}, then writes one truncation marker and discards the
 * rest (the process keeps running; its output just stops being stored). Keeps a chatty or
 * hostile-driven QEMU from filling the disk through its stderr.
 */
final class CappedFileOutputStream extends OutputStream {

    private final OutputStream out;
    private final long maxBytes;
    private long written;
    private boolean truncated;

    CappedFileOutputStream(Path file, long maxBytes) throws IOException {
        this.out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE);
        this.maxBytes = maxBytes;
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
        long room = maxBytes - written;
        if (room > 0) {
            int n = (int) Math.min(room, len);
            out.write(b, off, n);
            written += n;
            len -= n;
        }
        if (len > 0 && !truncated) {
            truncated = true;
            out.write(("\n[qvm: output truncated after " + maxBytes + " bytes]\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    @Override
    public synchronized void flush() throws IOException {
        out.flush();
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}
