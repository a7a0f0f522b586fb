package io.qvm.worker;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.zip.DeflaterOutputStream;
import org.apache.pdfbox.cos.COSName;
import org.apache.pdfbox.pdmodel.graphics.color.PDDeviceGray;
import org.apache.pdfbox.pdmodel.graphics.image.PDImageXObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.apache.pdfbox.pdfwriter.compress.CompressParameters;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.pdmodel.PDPage;
import org.apache.pdfbox.pdmodel.PDPageContentStream;
import org.apache.pdfbox.pdmodel.common.PDRectangle;
import org.apache.pdfbox.pdmodel.encryption.AccessPermission;
import org.apache.pdfbox.pdmodel.encryption.StandardProtectionPolicy;
import org.apache.pdfbox.pdmodel.font.PDType1Font;
import org.apache.pdfbox.pdmodel.font.Standard14Fonts;

/** PDFs made with PDFBox for the tests (ordinary and hostile), so no binaries are committed. */
final class Pdfs {

    private Pdfs() {
    }

    interface Content {
        void draw(PDPageContentStream cs, int pageNumber) throws IOException;
    }

    static byte[] make(int pages, PDRectangle size, Content content) {
        try (PDDocument d = new PDDocument(); ByteArrayOutputStream out = new ByteArrayOutputStream()) {
            for (int i = 1; i <= pages; i++) {
                PDPage p = new PDPage(size);
                d.addPage(p);
                try (PDPageContentStream cs = new PDPageContentStream(d, p)) {
                    content.draw(cs, i);
                }
            }
            // Uncompressed (no object streams), so tests can patch the page tree in place.
            d.save(out, CompressParameters.NO_COMPRESSION);
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One 200 × 100 pt page: a red square on the left half, black text "Hello" on the right half. */
    static byte[] squareAndText() {
        return make(1, new PDRectangle(200, 100), (cs, n) -> {
            cs.setNonStrokingColor(1f, 0f, 0f);
            cs.addRect(0, 0, 100, 100);
            cs.fill();
            cs.beginText();
            cs.setFont(new PDType1Font(Standard14Fonts.FontName.HELVETICA_BOLD), 36);
            cs.setNonStrokingColor(0f, 0f, 0f);
            cs.newLineAtOffset(105, 35);
            cs.showText("Hello");
            cs.endText();
        });
    }

    /** {@code pages} pages of 100 × 100 pt; page n is filled with grey n*10. */
    static byte[] numbered(int pages) {
        return make(pages, new PDRectangle(100, 100), (cs, n) -> {
            float g = Math.min(1f, n / 10f);
            cs.setNonStrokingColor(g, g, g);
            cs.addRect(0, 0, 100, 100);
            cs.fill();
        });
    }

    /** A page whose content stream has {@code ops} fill operations: slow to render. */
    static byte[] slow(int ops) {
        return make(1, new PDRectangle(100, 100), (cs, n) -> {
            for (int i = 0; i < ops; i++) {
                cs.setNonStrokingColor((i % 255) / 255f, 0f, 0f);
                cs.addRect(i % 100, (i / 100) % 100, 1, 1);
                cs.fill();
            }
        });
    }

    /** A page that draws a grey image declaring {@code w} × {@code h} pixels, whose data is a few bytes. */
    static byte[] withDeclaredImage(int w, int h) {
        try (PDDocument d = new PDDocument(); ByteArrayOutputStream out = new ByteArrayOutputStream()) {
            PDPage p = new PDPage(new PDRectangle(50, 50));
            d.addPage(p);
            ByteArrayOutputStream z = new ByteArrayOutputStream();
            try (DeflaterOutputStream def = new DeflaterOutputStream(z)) {
                def.write(new byte[4096]);
            }
            PDImageXObject img = new PDImageXObject(d, new ByteArrayInputStream(z.toByteArray()), COSName.FLATE_DECODE,
                    w, h, 8, PDDeviceGray.INSTANCE);
            try (PDPageContentStream cs = new PDPageContentStream(d, p)) {
                cs.drawImage(img, 0, 0, 50, 50);
            }
            d.save(out);
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Encrypted with a user password. */
    static byte[] encrypted() {
        try (PDDocument d = new PDDocument(); ByteArrayOutputStream out = new ByteArrayOutputStream()) {
            d.addPage(new PDPage(new PDRectangle(50, 50)));
            StandardProtectionPolicy p = new StandardProtectionPolicy("owner", "secret", new AccessPermission());
            p.setEncryptionKeyLength(128);
            d.protect(p);
            d.save(out);
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One page, but the page tree claims {@code count} pages. */
    static byte[] lyingPageCount(long count) {
        String pdf = new String(numbered(1), StandardCharsets.ISO_8859_1);
        String patched = pdf.replaceFirst("/Count 1", "/Count " + count);
        if (patched.equals(pdf)) {
            throw new IllegalStateException("no /Count 1 in the generated PDF");
        }
        return patched.getBytes(StandardCharsets.ISO_8859_1);
    }
}
