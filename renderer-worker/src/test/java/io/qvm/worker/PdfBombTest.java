package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.Messages;
import io.qvm.protocol.RenderRequest;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import javax.imageio.ImageIO;
import org.apache.pdfbox.cos.COSName;
import org.apache.pdfbox.cos.COSStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every {@link PdfBombCases} case in one real worker with the guest's heap (-Xmx576m), one after
 * another: each gives its expected outcome and the worker stays alive. Before the preflight, the
 * first mask bomb ended the worker with an OutOfMemoryError (status 3).
 */
@Tag("unit")
@Tag("security")
class PdfBombTest {

    /** The guest worker's default heap (SandboxConfig's xmx). */
    static final String GUEST_HEAP = "-Xmx576m";

    @Test
    void everyBombGivesItsOutcomeAndTheWorkerLives() throws Exception {
        List<String> wrong = new ArrayList<>();
        try (ChildWorker w = ChildWorker.start(GUEST_HEAP, "-Dqvm.warmup=false")) {
            w.handshake(ChildWorker.LIMITS);
            long id = 1;
            for (HostileCase c : PdfBombCases.CASES) {
                String got = outcome(w, c.request().get(), id++);
                if (!got.equals(c.expected())) {
                    wrong.add(c + " gave " + got);
                }
            }
            assertEquals("OK", outcome(w, RenderRequest.pdf(Pdfs.numbered(1)), id), "still serves");
            assertTrue(wrong.isEmpty(), wrong + "\nstderr:\n" + w.stderr());
        }
    }

    @Test
    void anOrdinaryScannedPageStillRenders() throws Exception {
        try (ChildWorker w = ChildWorker.start(GUEST_HEAP, "-Dqvm.warmup=false")) {
            w.handshake(ChildWorker.LIMITS);
            assertEquals("OK", outcome(w, RenderRequest.pdf(scan(5000, 7000)), 1), w.stderr());
        }
    }

    /** A page holding one {@code w} × {@code h} RGB JPEG, like a scanner writes. */
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

    static String outcome(ChildWorker w, RenderRequest r, long id) throws IOException {
        w.send(Messages.toFrame(r, id));
        Frame f = w.receive();
        if (f.kind() == FrameKind.RENDER_RESULT) {
            return "OK";
        }
        ErrorReply e = Messages.errorReply(f);
        return e.code().name();
    }
}
