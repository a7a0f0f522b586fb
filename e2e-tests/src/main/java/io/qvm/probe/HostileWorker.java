package io.qvm.probe;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameCodec;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameTooLargeException;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.worker.DocumentRenderHandler;
import io.qvm.worker.FatalErrors;
import io.qvm.worker.Log;
import io.qvm.worker.RenderHandler;
import io.qvm.worker.WorkerLoop;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;

/**
 * A worker taken over by a document: the real worker loop and renderer, except that a document
 * carrying {@code qvm-hostile:ACT} makes it do what an exploit in Batik or PDFBox could make the
 * worker do. The tests build an image with it in place of the renderer (the image build takes any
 * worker jar: this class is added to the real worker's jar) and drive it through the real backend
 * and pool, so every act meets the host's real defences. Documents without the marker render as
 * usual, so the same sandbox also shows that ordinary work still gets through.
 *
 * <p>Acts (see {@link Act}): flooding the console, garbage on the frame stream, a frame begun and
 * never finished, an answer with another request's id, a PNG that lies about its size, a frame
 * above the response limit, the worker crashing or exiting (the init then powers the guest off),
 * an endless render, exhausting the heap, filling {@code /tmp}.
 */
public final class HostileWorker {

    /** What marks a hostile document: {@code qvm-hostile:} followed by an {@link Act}'s wire name. */
    public static final String MARKER = "qvm-hostile:";

    /** Bytes the console flood writes to stderr (well past the init's cap of the sandbox's stderr). */
    public static final int FLOOD_BYTES = 16 << 20;

    /** What a hostile document makes the worker do. */
    public enum Act {
        /** Writes {@link #FLOOD_BYTES} of text to stderr (the guest console), then renders normally. */
        FLOOD_CONSOLE("flood-console"),
        /** Writes 1 MiB of random bytes on the frame stream, then the real answer. */
        GARBAGE("garbage"),
        /** Begins a RENDER_RESULT frame (prefix, header, part of the body) and never finishes it. */
        STALL("stall"),
        /** Answers with a well-formed result under another request's id. */
        WRONG_ID("wrong-id"),
        /** Answers with a real PNG of 8×8 pixels that the result claims is 4,000×4,000. */
        LYING_PNG("lying-png"),
        /** Begins a frame whose declared body is 1 GiB, above any response limit, and waits. */
        OVERSIZE("oversize"),
        /** Halts the JVM with status 134, as an abort would, mid-request. */
        CRASH("crash"),
        /** Exits with status 0 mid-request: the init reports the exit and powers the guest off. */
        EXIT("exit"),
        /** Spins forever on every core it can get, ignoring interrupts. */
        ENDLESS("endless"),
        /** Keeps allocating until the heap is exhausted, then halts as the real worker does. */
        EXHAUST_HEAP("exhaust-heap"),
        /** Writes {@code /tmp} until the tmpfs refuses, answers how much it wrote, and deletes it. */
        FILL_TMP("fill-tmp");

        private final String wire;

        Act(String wire) {
            this.wire = wire;
        }

        public String wire() {
            return wire;
        }

        /** The SVG that asks for this act (a valid, tiny document apart from its comment). */
        public byte[] document() {
            return ("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"><!-- " + MARKER + wire
                    + " --><rect width=\"8\" height=\"8\"/></svg>").getBytes(StandardCharsets.US_ASCII);
        }

        static Act find(byte[] document) {
            String text = new String(document, StandardCharsets.ISO_8859_1);
            int at = text.indexOf(MARKER);
            if (at < 0) {
                return null;
            }
            String rest = text.substring(at + MARKER.length());
            for (Act a : values()) {
                if (rest.startsWith(a.wire)) {
                    return a;
                }
            }
            return null;
        }
    }

    /** The prefix of {@link Act#FILL_TMP}'s answer, followed by the bytes written. */
    public static final String FILLED = "filled /tmp with ";

    private HostileWorker() {
    }

    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true");
        System.setProperty("org.apache.commons.logging.Log", "org.apache.commons.logging.impl.NoOpLog");
        if (System.getProperty("pdfbox.fontcache") == null) {
            System.setProperty("pdfbox.fontcache", System.getProperty("java.io.tmpdir"));
        }
        PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        OutputStream frames = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(err);
        System.setErr(err);
        System.setIn(new ByteArrayInputStream(new byte[0]));
        Log log = new Log(err);
        log.info("hostile worker starting");
        int status;
        try {
            status = new WorkerLoop(new BufferedInputStream(new FileInputStream(FileDescriptor.in), 1 << 20), frames,
                    new Handler(new DocumentRenderHandler(log), frames, err), log, "hostile-1").run();
        } catch (OutOfMemoryError e) {
            FatalErrors.outOfMemory();
            return;
        } catch (IOException e) {
            status = 1;
        }
        System.exit(status);
    }

    /** The real renderer for ordinary documents, an act for hostile ones. */
    private static final class Handler implements RenderHandler {
        private final DocumentRenderHandler real;
        private final OutputStream frames;
        private final PrintStream console;

        Handler(DocumentRenderHandler real, OutputStream frames, PrintStream console) {
            this.real = real;
            this.frames = frames;
            this.console = console;
        }

        @Override
        public List<String> capabilities() {
            return real.capabilities();
        }

        @Override
        public void warmUp() {
            real.warmUp();
        }

        @Override
        public boolean healthy() {
            return real.healthy();
        }

        @Override
        public Frame handle(Frame request, Limits limits) {
            RenderRequest r;
            try {
                r = Messages.renderRequest(request);
            } catch (IllegalArgumentException e) {
                return real.handle(request, limits);
            }
            Act act = Act.find(r.document());
            if (act == null) {
                return real.handle(request, limits);
            }
            console.println("hostile worker: " + act.wire() + " (request " + request.requestId() + ")");
            try {
                return act(act, request, limits);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private Frame act(Act act, Frame request, Limits limits) throws IOException {
            long id = request.requestId();
            switch (act) {
                case FLOOD_CONSOLE -> {
                    byte[] line = ("qvm: phase=worker-exit status=0 " + "x".repeat(990) + "\n")
                            .getBytes(StandardCharsets.US_ASCII);
                    for (long n = 0; n < FLOOD_BYTES; n += line.length) {
                        console.write(line, 0, line.length);
                    }
                    console.flush();
                    return real.handle(request, limits);
                }
                case GARBAGE -> {
                    byte[] noise = new byte[1 << 20];
                    new Random(id).nextBytes(noise);
                    raw(noise);
                    return real.handle(request, limits);
                }
                case STALL -> {
                    Frame png = small(limits, id);
                    byte[] all = encode(png);
                    raw(java.util.Arrays.copyOf(all, all.length - png.body().length / 2));
                    return sleepForever();
                }
                case WRONG_ID -> {
                    return small(limits, id + 1);
                }
                case LYING_PNG -> {
                    RenderResult truth = Messages.renderResult(small(limits, id));
                    return Messages.toFrame(new RenderResult(truth.png(), 4000, 4000, 1), id);
                }
                case OVERSIZE -> {
                    raw(prefix(FrameKind.RENDER_RESULT, id, 0, 1 << 30));
                    return sleepForever();
                }
                case CRASH -> {
                    Runtime.getRuntime().halt(134);
                    return null;
                }
                case EXIT -> {
                    System.exit(0);
                    return null;
                }
                case ENDLESS -> {
                    for (int i = 1; i < Runtime.getRuntime().availableProcessors(); i++) {
                        Thread t = new Thread(HostileWorker::spin, "hostile-spin-" + i);
                        t.setDaemon(true);
                        t.start();
                    }
                    spin();
                    return null;
                }
                case EXHAUST_HEAP -> {
                    List<long[]> hoard = new ArrayList<>();
                    try {
                        while (true) {
                            hoard.add(new long[1 << 17]);
                        }
                    } catch (OutOfMemoryError e) {
                        hoard = null;
                        FatalErrors.outOfMemory();
                        return null;
                    }
                }
                case FILL_TMP -> {
                    Path f = Path.of(System.getProperty("java.io.tmpdir"), "hostile-fill");
                    long written = 0;
                    byte[] chunk = new byte[1 << 20];
                    try (OutputStream o = Files.newOutputStream(f)) {
                        while (written < (8L << 30)) {
                            o.write(chunk);
                            written += chunk.length;
                        }
                    } catch (IOException e) {
                        console.println("hostile worker: /tmp refused after " + written + " bytes: " + e);
                    } finally {
                        Files.deleteIfExists(f);
                    }
                    return Messages.toFrame(new ErrorReply(id, ErrorCode.INTERNAL, FILLED + written + " bytes"));
                }
                default -> throw new IllegalStateException(act.toString());
            }
        }

        /** A real, small answer: the renderer's result for an 8×8 SVG under request id {@code id}. */
        private Frame small(Limits limits, long id) {
            byte[] svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"><rect width=\"8\" height=\"8\"/></svg>"
                    .getBytes(StandardCharsets.US_ASCII);
            return real.handle(Messages.toFrame(RenderRequest.svg(svg), id), limits);
        }

        private void raw(byte[] bytes) throws IOException {
            frames.write(bytes);
            frames.flush();
        }
    }

    private static byte[] encode(Frame f) {
        try {
            return FrameCodec.encode(f, FrameLimits.ofBody(64 << 20));
        } catch (FrameTooLargeException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A valid frame prefix (magic, version, kind, id, lengths, CRC) declaring the given lengths. */
    static byte[] prefix(FrameKind kind, long id, int headerBytes, int bodyBytes) {
        ByteBuffer out = ByteBuffer.allocate(FrameCodec.PREFIX_BYTES);
        out.putInt(FrameCodec.MAGIC).put((byte) FrameCodec.VERSION).put((byte) kind.code()).putShort((short) 0)
                .putLong(id).putInt(headerBytes).putInt(bodyBytes);
        CRC32C crc = new CRC32C();
        crc.update(out.array(), 0, 24);
        out.putInt((int) crc.getValue());
        return out.array();
    }

    private static void spin() {
        long x = 0;
        while (true) {
            x += System.nanoTime() & 1;
            if (x == Long.MIN_VALUE) {
                System.err.println(x);
            }
        }
    }

    private static Frame sleepForever() {
        while (true) {
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException ignored) {
                // a taken-over worker does not give up
            }
        }
    }
}
