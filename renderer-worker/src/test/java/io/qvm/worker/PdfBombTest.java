package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import javax.imageio.ImageIO;
import org.apache.pdfbox.cos.COSName;
import org.apache.pdfbox.cos.COSStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each {@link PdfBombCases} case on its own, in a real worker with the guest's heap: it gives its
 * expected outcome from an estimate, not from an OutOfMemoryError that {@link MemoryGuard}
 * recovered from, and the same worker then still renders a small PDF. One worker serves the cases
 * in turn; a case that kills it fails, and the next case gets a fresh worker.
 * ({@link HostileCorpusTest} runs the whole corpus in one worker.)
 */
@Tag("unit")
@Tag("security")
class PdfBombTest {

    private static ChildWorker worker;
    private static long ids;

    static List<HostileCase> cases() {
        return PdfBombCases.CASES;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void givesItsOutcomeAndTheWorkerLives(HostileCase c) throws Exception {
        ChildWorker w = worker();
        String expected = c.expected().equals("OK") && c.width() > 0 ? "OK " + c.width() + "x" + c.height()
                : c.expected();
        long recovered = recovered(w);
        String got = outcome(w, c.request().get());
        String alive = outcome(w, RenderRequest.pdf(Pdfs.numbered(1)));
        assertEquals(expected, c.expected().equals("OK") && c.width() == 0 ? got.split(" ")[0] : got, w.stderr());
        assertEquals("OK 133x133", alive, "the worker still serves");
        assertEquals(recovered, recovered(w), "out-of-memory errors recovered from: the estimate missed it");
    }

    @Test
    void anOrdinaryScannedPageStillRenders() throws Exception {
        assertEquals("OK 67x67", outcome(worker(), RenderRequest.pdf(scan(5000, 7000))), worker().stderr());
    }

    /**
     * A page whose content inflates to 1 GiB of whitespace: no operator for seconds, so only the
     * reads of the content can notice the deadline. Before {@link CancellableRead} the render
     * could not be stopped and the worker exited with status 4.
     */
    @Test
    void aPageContentPastTheDeadlineTimesOutAndTheWorkerLives() throws Exception {
        Limits quick = new Limits(8 << 20, 8 << 20, 4_000_000, 4000, 20, 1000);
        try (ChildWorker w = ChildWorker.start("-Xmx" + HostileCorpusTest.GUEST_HEAP_MIB + "m", "-XX:+UseSerialGC",
                "-Dqvm.warmup=false")) {
            w.handshake(quick);
            assertEquals("TIMEOUT", outcome(w, RenderRequest.pdf(PdfBombs.contentBomb(1L << 30))));
            assertEquals("OK 133x133", outcome(w, RenderRequest.pdf(Pdfs.numbered(1))), w.stderr());
        }
    }

    @AfterAll
    static void stop() {
        if (worker != null) {
            worker.close();
        }
    }

    /** The shared worker, started again if the last case ended it. */
    private static ChildWorker worker() throws IOException {
        if (worker == null || !worker.isAlive()) {
            if (worker != null) {
                worker.close();
            }
            worker = ChildWorker.start("-Xmx" + HostileCorpusTest.GUEST_HEAP_MIB + "m", "-XX:+UseSerialGC",
                    "-Dqvm.warmup=false");
            worker.handshake(ChildWorker.LIMITS);
        }
        return worker;
    }

    private static long recovered(ChildWorker w) {
        return HostileCorpusTest.count(w.stderr(), MemoryGuard.RECOVERED_LINE);
    }

    /** A page holding one {@code w} × {@code h} RGB JPEG, as a scanner writes it. */
    static byte[] scan(int w, int h) {
        return PdfBombs.page((d, res) -> {
            BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
            ByteArrayOutputStream jpeg = new ByteArrayOutputStream();
            ImageIO.write(img, "jpeg", jpeg);
            COSStream s = PdfBombs.greyImage(d, w, h);
            try (OutputStream o = s.createRawOutputStream()) {
                o.write(jpeg.toByteArray());
            }
            s.setItem(COSName.FILTER, COSName.DCT_DECODE);
            s.setItem(COSName.COLORSPACE, COSName.DEVICERGB);
            return PdfBombs.drawImage(res, "Im", s);
        });
    }

    /** {@code OK WxH}, an error code's name, or {@code DEAD} if the worker ended. */
    private static String outcome(ChildWorker w, RenderRequest r) throws IOException {
        Frame f;
        try {
            w.send(Messages.toFrame(r, ++ids));
            f = w.receive();
        } catch (IOException e) {
            return "DEAD";
        }
        if (f.kind() == FrameKind.RENDER_RESULT) {
            RenderResult result = Messages.renderResult(f);
            return "OK " + result.width() + "x" + result.height();
        }
        return Messages.errorReply(f).code().name();
    }
}
