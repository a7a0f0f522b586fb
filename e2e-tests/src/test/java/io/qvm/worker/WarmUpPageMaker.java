package io.qvm.worker;

import java.awt.Color;
import java.awt.GradientPaint;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.pdmodel.PDPage;
import org.apache.pdfbox.pdmodel.PDPageContentStream;
import org.apache.pdfbox.pdmodel.common.PDRectangle;
import org.apache.pdfbox.pdmodel.font.PDType0Font;
import org.apache.pdfbox.pdmodel.font.PDType1Font;
import org.apache.pdfbox.pdmodel.font.Standard14Fonts;
import org.apache.pdfbox.pdmodel.graphics.image.JPEGFactory;
import org.apache.pdfbox.pdmodel.graphics.image.LosslessFactory;
import org.apache.pdfbox.pdmodel.graphics.image.PDImageXObject;

/**
 * How qemu-backend's {@code io/qvm/warmup/page.pdf} and the PNG and JPEG inside
 * {@code warmup/shapes.svg} (base64 {@code data:} URIs) were made, 2026-12-06, with PDFBox 3
 * and the host's DejaVu Sans (embedded as a subset). Not a test: run it by hand with the test
 * classpath and a directory, then copy {@code page.pdf} and the images' base64 into place (the
 * template key hashes the documents, so new ones make new templates).
 */
public final class WarmUpPageMaker {

    private WarmUpPageMaker() {
    }

    private static BufferedImage picture(int w, int h) {
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setPaint(new GradientPaint(0, 0, new Color(0x1e3a8a), w, h, new Color(0xfde047)));
        g.fillRect(0, 0, w, h);
        g.setColor(new Color(0x14532d));
        g.fillOval(w / 4, h / 4, w / 2, h / 2);
        g.dispose();
        return img;
    }
    public static void main(String[] a) throws Exception {
        Path out = Path.of(a[0]);
        ByteArrayOutputStream png = new ByteArrayOutputStream(); ImageIO.write(picture(48, 32), "png", png);
        ByteArrayOutputStream jpg = new ByteArrayOutputStream(); ImageIO.write(picture(64, 48), "jpeg", jpg);
        Files.write(out.resolve("warm.png"), png.toByteArray());
        Files.write(out.resolve("warm.jpg"), jpg.toByteArray());
        try (PDDocument doc = new PDDocument()) {
            PDPage page = new PDPage(PDRectangle.LETTER);
            doc.addPage(page);
            PDType0Font embedded = PDType0Font.load(doc, new File("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"));
            PDImageXObject jpeg = JPEGFactory.createFromByteArray(doc, jpg.toByteArray());
            PDImageXObject flate = LosslessFactory.createFromImage(doc, picture(48, 32));
            try (PDPageContentStream cs = new PDPageContentStream(doc, page)) {
                cs.setNonStrokingColor(0.12f, 0.23f, 0.54f); cs.addRect(36, 640, 540, 110); cs.fill();
                Standard14Fonts.FontName[] faces = {Standard14Fonts.FontName.HELVETICA, Standard14Fonts.FontName.HELVETICA_BOLD,
                    Standard14Fonts.FontName.TIMES_ROMAN, Standard14Fonts.FontName.TIMES_ITALIC, Standard14Fonts.FontName.COURIER};
                float y = 600;
                for (Standard14Fonts.FontName f : faces) {
                    cs.beginText(); cs.setNonStrokingColor(0f, 0f, 0f); cs.setFont(new PDType1Font(f), 14);
                    cs.newLineAtOffset(48, y); cs.showText("A page of ordinary text in " + f.getName() + ", 0123456789."); cs.endText();
                    y -= 24;
                }
                cs.beginText(); cs.setFont(embedded, 12); cs.newLineAtOffset(48, y);
                cs.showText("An embedded TrueType subset: quick brown fox, 12 345,67 \u20ac."); cs.endText();
                cs.beginText(); cs.setNonStrokingColor(1f, 1f, 1f); cs.setFont(new PDType1Font(Standard14Fonts.FontName.HELVETICA_BOLD), 28);
                cs.newLineAtOffset(60, 690); cs.showText("Warm-up page"); cs.endText();
                cs.setStrokingColor(0.8f, 0.1f, 0.1f); cs.setLineWidth(3); cs.setLineDashPattern(new float[] {6, 3}, 0);
                cs.moveTo(48, 380); cs.curveTo(150, 480, 300, 280, 560, 380); cs.stroke();
                cs.setLineDashPattern(new float[0], 0);
                cs.setNonStrokingColor(0.08f, 0.33f, 0.18f);
                cs.moveTo(48, 200); cs.lineTo(160, 320); cs.lineTo(260, 230); cs.lineTo(400, 330); cs.lineTo(560, 210); cs.lineTo(560, 180); cs.lineTo(48, 180); cs.closePath(); cs.fill();
                cs.drawImage(jpeg, 48, 60, 192, 144);
                cs.drawImage(flate, 300, 60, 144, 96);
            }
            doc.getDocumentInformation().setProducer("qvm");
            doc.getDocument().setVersion(1.6f);
            doc.save(out.resolve("warmup-page.pdf").toFile());
        }
        System.out.println("png " + png.size() + " jpg " + jpg.size());
    }
}
