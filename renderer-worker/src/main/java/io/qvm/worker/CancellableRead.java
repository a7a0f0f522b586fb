package io.qvm.worker;

import java.io.IOException;
import org.apache.pdfbox.io.RandomAccessRead;
import org.apache.pdfbox.io.RandomAccessReadView;

/**
 * A {@link RandomAccessRead} that checks the watchdog's {@link Cancellation} on every read, so
 * PDFBox stops reading a content stream when the render is cancelled. Needed for a page's own
 * content: PDFBox decodes it as it parses it, and a few MiB of Flate data that inflate to GiB of
 * whitespace hold no operator at which the page drawer's check would run (measured: a 4 MB PDF
 * kept PDFBox busy for 14 s on the host, and the worker could not stop it).
 */
final class CancellableRead implements RandomAccessRead {

    private final RandomAccessRead in;
    private final Cancellation cancel;

    CancellableRead(RandomAccessRead in, Cancellation cancel) {
        this.in = in;
        this.cancel = cancel;
    }

    @Override
    public int read() throws IOException {
        cancel.checkUnchecked();
        return in.read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        cancel.checkUnchecked();
        return in.read(b, off, len);
    }

    @Override
    public int peek() throws IOException {
        return in.peek();
    }

    // The rest delegate too, not to the interface's defaults: PDFBox's streaming content reader
    // cannot seek, and implements rewind and skip without it.
    @Override
    public void rewind(int bytes) throws IOException {
        in.rewind(bytes);
    }

    @Override
    public void skip(int length) throws IOException {
        cancel.checkUnchecked();
        in.skip(length);
    }

    @Override
    public int available() throws IOException {
        return in.available();
    }

    @Override
    public long getPosition() throws IOException {
        return in.getPosition();
    }

    @Override
    public void seek(long position) throws IOException {
        in.seek(position);
    }

    @Override
    public long length() throws IOException {
        return in.length();
    }

    @Override
    public boolean isClosed() {
        return in.isClosed();
    }

    @Override
    public boolean isEOF() throws IOException {
        return in.isEOF();
    }

    @Override
    public RandomAccessReadView createView(long startPosition, long streamLength) throws IOException {
        return in.createView(startPosition, streamLength);
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
