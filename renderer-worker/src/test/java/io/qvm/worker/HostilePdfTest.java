package io.qvm.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.apache.pdfbox.pdmodel.common.PDRectangle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Broken and hostile PDFs: typed errors, and the handler keeps serving. */
@Tag("unit")
@Tag("security")
class HostilePdfTest {

    private static final Renders R = new Renders();

    @AfterEach
    void stillServes() {
        assertTrue(R.stillServes());
        assertTrue(R.render(RenderRequest.pdf(Pdfs.numbered(1))).result() != null, "a good PDF still renders");
    }

    @Test
    void emptyInput() {
        assertEquals(ErrorCode.PARSE_ERROR, R.render(RenderRequest.pdf(new byte[0])).code());
    }

    @Test
    void randomBytes() {
        byte[] junk = new byte[100_000];
        new Random(3).nextBytes(junk);
        assertEquals(ErrorCode.PARSE_ERROR, R.render(RenderRequest.pdf(junk)).code());
    }

    @Test
    void truncatedAfterTheHeader() {
        byte[] pdf = Pdfs.squareAndText();
        Renders.Outcome o = R.render(RenderRequest.pdf(Arrays.copyOf(pdf, 200)));
        assertEquals(ErrorCode.PARSE_ERROR, o.code(), o.toString());
    }

    @Test
    void truncatedBeforeTheTrailerIsRepairedOrRefused() {
        byte[] pdf = Pdfs.squareAndText();
        Renders.Outcome o = R.render(RenderRequest.pdf(Arrays.copyOf(pdf, pdf.length * 3 / 4)));
        // PDFBox's lenient parser may rebuild the cross-reference table; either outcome is typed.
        if (o.error() != null) {
            assertEquals(ErrorCode.PARSE_ERROR, o.code(), o.toString());
        } else {
            assertEquals(267, o.image().getWidth());
        }
    }

    @Test
    void corruptedBody() {
        byte[] pdf = Pdfs.squareAndText();
        Random rnd = new Random(11);
        for (int i = 20; i < pdf.length - 40; i += 7) {
            pdf[i] = (byte) rnd.nextInt();
        }
        Renders.Outcome o = R.render(RenderRequest.pdf(pdf));
        assertTrue(o.error() == null || o.code() == ErrorCode.PARSE_ERROR, o.toString());
    }

    @Test
    void notAPdf() {
        byte[] svg = Corpus.bytes("ok/shapes.svg");
        assertEquals(ErrorCode.PARSE_ERROR, R.render(RenderRequest.pdf(svg)).code());
    }

    @Test
    void hugePageCountIsRefusedBeforeAnyPage() {
        Renders.Outcome o = R.render(RenderRequest.pdf(Pdfs.lyingPageCount(2_000_000_000L)));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
        Renders.Outcome real = R.render(RenderRequest.pdf(Pdfs.numbered(Renders.LIMITS.maxPages() + 1)));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, real.code(), real.toString());
    }

    @Test
    void hugePageSizeIsALimit() {
        byte[] big = Pdfs.make(1, new PDRectangle(14_400, 14_400), (cs, n) -> { });
        assertEquals(ErrorCode.LIMIT_EXCEEDED, R.render(RenderRequest.pdf(big)).code());
        Limits tinyPixels = new Limits(4 << 20, 8 << 20, 100, 4000, 20, 20_000);
        assertEquals(ErrorCode.LIMIT_EXCEEDED, R.render(RenderRequest.pdf(Pdfs.numbered(1)), tinyPixels).code());
    }

    @Test
    void imageBombIsALimitNotAnOutOfMemory() {
        byte[] pdf = Pdfs.withDeclaredImage(60_000, 60_000);
        Renders.Outcome o = R.render(RenderRequest.pdf(pdf));
        assertEquals(ErrorCode.LIMIT_EXCEEDED, o.code(), o.toString());
    }

    @Test
    void passwordProtected() {
        assertEquals(ErrorCode.UNSUPPORTED, R.render(RenderRequest.pdf(Pdfs.encrypted())).code());
    }

    @Test
    void outputAboveTheResponseLimit() {
        Limits smallResponse = new Limits(4 << 20, 200, 4_000_000, 4000, 20, 20_000);
        Renders.Outcome o = R.render(RenderRequest.pdf(Pdfs.squareAndText()), smallResponse);
        assertEquals(ErrorCode.TOO_LARGE, o.code(), o.toString());
    }

    @Test
    void launchActionsAndExternalReferencesAreInert() {
        // A page with an /AA open action and a /Launch of a file: rendering never runs actions.
        String pdf = new String(Pdfs.numbered(1), StandardCharsets.ISO_8859_1);
        String patched = pdf.replaceFirst("/Type /Catalog", "/Type /Catalog /OpenAction << /S /Launch /F (file:///bin/sh) >>");
        Renders.Outcome o = R.render(RenderRequest.pdf(patched.getBytes(StandardCharsets.ISO_8859_1)));
        assertTrue(o.error() == null || o.code() == ErrorCode.PARSE_ERROR, o.toString());
    }
}
