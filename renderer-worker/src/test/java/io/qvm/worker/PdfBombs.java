package io.qvm.worker;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.zip.Deflater;
import java.util.zip.DeflaterOutputStream;
import javax.imageio.ImageIO;
import org.apache.pdfbox.cos.COSArray;
import org.apache.pdfbox.cos.COSDictionary;
import org.apache.pdfbox.cos.COSInteger;
import org.apache.pdfbox.cos.COSName;
import org.apache.pdfbox.cos.COSStream;
import org.apache.pdfbox.pdmodel.PDDocument;
import org.apache.pdfbox.pdmodel.PDPage;
import org.apache.pdfbox.pdmodel.PDResources;
import org.apache.pdfbox.pdmodel.common.PDRectangle;
import org.apache.pdfbox.pdmodel.common.PDStream;
import org.apache.pdfbox.pdmodel.graphics.form.PDFormXObject;
import org.apache.pdfbox.pdmodel.interactive.annotation.PDAnnotationSquare;
import org.apache.pdfbox.pdmodel.interactive.annotation.PDAppearanceDictionary;
import org.apache.pdfbox.pdmodel.interactive.annotation.PDAppearanceStream;

/**
 * Small PDFs that declare large costs, built with PDFBox's COS objects (its high-level API checks
 * what these documents lie about). Each is one 50 × 50 pt page.
 */
final class PdfBombs {

    private PdfBombs() {
    }

    /** Builds the page's resources and content stream. */
    interface Page {
        String draw(PDDocument doc, PDResources resources) throws IOException;
    }

    static byte[] page(Page content) {
        try (PDDocument d = new PDDocument(); ByteArrayOutputStream out = new ByteArrayOutputStream()) {
            PDPage p = new PDPage(new PDRectangle(50, 50));
            d.addPage(p);
            PDResources res = new PDResources();
            p.setResources(res);
            String ops = content.draw(d, res);
            if (ops != null) {
                p.setContents(new PDStream(stream(d, ops.getBytes(StandardCharsets.ISO_8859_1), false)));
            }
            d.save(out);
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A stream holding {@code data}, Flate-compressed when {@code deflate}. */
    static COSStream stream(PDDocument d, byte[] data, boolean deflate) throws IOException {
        COSStream s = d.getDocument().createCOSStream();
        try (OutputStream o = s.createRawOutputStream()) {
            o.write(deflate ? deflate(data.length, data) : data);
        }
        if (deflate) {
            s.setItem(COSName.FILTER, COSName.FLATE_DECODE);
        }
        return s;
    }

    /** Flate data that inflates to {@code size} bytes: {@code head}, then zeros. */
    static byte[] deflate(long size, byte[] head) {
        ByteArrayOutputStream z = new ByteArrayOutputStream();
        try (DeflaterOutputStream def = new DeflaterOutputStream(z, new Deflater(Deflater.BEST_SPEED), 1 << 16)) {
            def.write(head);
            byte[] zeros = new byte[1 << 20];
            for (long left = size - head.length; left > 0; left -= zeros.length) {
                def.write(zeros, 0, (int) Math.min(left, zeros.length));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return z.toByteArray();
    }

    /** An 8-bit grey image stream of {@code w} × {@code h} whose data is a few bytes. */
    static COSStream greyImage(PDDocument d, int w, int h) throws IOException {
        COSStream s = stream(d, new byte[16], true);
        s.setItem(COSName.TYPE, COSName.XOBJECT);
        s.setItem(COSName.SUBTYPE, COSName.IMAGE);
        s.setInt(COSName.WIDTH, w);
        s.setInt(COSName.HEIGHT, h);
        s.setInt(COSName.BITS_PER_COMPONENT, 8);
        s.setItem(COSName.COLORSPACE, COSName.DEVICEGRAY);
        return s;
    }

    /** Draws image {@code name} over the page. */
    static String drawImage(PDResources res, String name, COSStream image) {
        COSDictionary xobjects = res.getCOSObject().getCOSDictionary(COSName.XOBJECT);
        if (xobjects == null) {
            xobjects = new COSDictionary();
            res.getCOSObject().setItem(COSName.XOBJECT, xobjects);
        }
        xobjects.setItem(COSName.getPDFName(name), image);
        return "q 50 0 0 50 0 0 cm /" + name + " Do Q\n";
    }

    /** A 1 × 1 image whose {@code /SMask} (or {@code /Mask} stencil) declares {@code side} × {@code side}. */
    static COSStream maskedPixel(PDDocument d, COSName key, int side) throws IOException {
        COSStream img = greyImage(d, 1, 1);
        COSStream mask = greyImage(d, side, side);
        if (key.equals(COSName.MASK)) {
            mask.removeItem(COSName.COLORSPACE);
            mask.setInt(COSName.BITS_PER_COMPONENT, 1);
            mask.setBoolean(COSName.IMAGE_MASK, true);
        }
        img.setItem(key, mask);
        return img;
    }

    static byte[] maskBomb(COSName key, int side) {
        return page((d, res) -> drawImage(res, "Im", maskedPixel(d, key, side)));
    }

    /** The soft-mask bomb drawn inside a form XObject. */
    static byte[] maskBombInForm(int side) {
        return page((d, res) -> {
            PDFormXObject form = new PDFormXObject(stream(d, new byte[0], false));
            fillWithMaskBomb(d, form, side);
            res.getCOSObject().setItem(COSName.XOBJECT, new COSDictionary());
            res.getCOSObject().getCOSDictionary(COSName.XOBJECT).setItem(COSName.getPDFName("Fm"), form);
            return "/Fm Do\n";
        });
    }

    /** Makes {@code form} a 50 × 50 form that draws the soft-mask bomb. */
    private static void fillWithMaskBomb(PDDocument d, PDFormXObject form, int side) throws IOException {
        form.setBBox(new PDRectangle(50, 50));
        PDResources inner = new PDResources();
        form.setResources(inner);
        String ops = drawImage(inner, "Im", maskedPixel(d, COSName.SMASK, side));
        try (OutputStream o = form.getContentStream().createOutputStream()) {
            o.write(ops.getBytes(StandardCharsets.ISO_8859_1));
        }
    }

    /** The soft-mask bomb drawn by an annotation's appearance stream. */
    static byte[] maskBombInAnnotation(int side) {
        return page((d, res) -> {
            PDPage p = d.getPage(0);
            PDAnnotationSquare a = new PDAnnotationSquare();
            a.setRectangle(new PDRectangle(50, 50));
            PDAppearanceStream ap = new PDAppearanceStream(stream(d, new byte[0], false));
            fillWithMaskBomb(d, ap, side);
            PDAppearanceDictionary apd = new PDAppearanceDictionary();
            apd.setNormalAppearance(ap);
            a.setAppearance(apd);
            p.getAnnotations().add(a);
            return "";
        });
    }

    /** A 1 × 1 DCT image whose JPEG frame header declares {@code side} × {@code side}, inline if asked. */
    static byte[] jpegHeaderLies(int side, boolean inline) {
        byte[] jpeg = jpegWithFrameSize(side);
        return page((d, res) -> {
            if (inline) {
                String head = "q 50 0 0 50 0 0 cm BI /W 1 /H 1 /BPC 8 /CS /G /F /DCT ID ";
                return head + new String(jpeg, StandardCharsets.ISO_8859_1) + "\nEI Q\n";
            }
            COSStream img = greyImage(d, 1, 1);
            try (OutputStream o = img.createRawOutputStream()) {
                o.write(jpeg);
            }
            img.setItem(COSName.FILTER, COSName.DCT_DECODE);
            return drawImage(res, "Im", img);
        });
    }

    /** A real 8 × 8 grey JPEG with its SOF0 height and width patched to {@code side}. */
    static byte[] jpegWithFrameSize(int side) {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ImageIO.write(new BufferedImage(8, 8, BufferedImage.TYPE_BYTE_GRAY), "jpeg", out);
            byte[] j = out.toByteArray();
            for (int i = 2; i + 8 < j.length; i++) {
                if ((j[i] & 0xFF) == 0xFF && (j[i + 1] & 0xFF) == 0xC0) {
                    j[i + 5] = (byte) (side >> 8);
                    j[i + 6] = (byte) side;
                    j[i + 7] = (byte) (side >> 8);
                    j[i + 8] = (byte) side;
                    return j;
                }
            }
            throw new IllegalStateException("no SOF0 in the JPEG");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A 1 × {@code rows} CCITT image whose DecodeParms declare {@code columns} columns. */
    static byte[] ccittColumns(int columns, int rows) {
        return page((d, res) -> {
            COSStream img = greyImage(d, 1, rows);
            try (OutputStream o = img.createRawOutputStream()) {
                o.write(new byte[64]);
            }
            img.setItem(COSName.FILTER, COSName.CCITTFAX_DECODE);
            img.setInt(COSName.BITS_PER_COMPONENT, 1);
            COSDictionary parms = new COSDictionary();
            parms.setInt(COSName.K, -1);
            parms.setInt(COSName.COLUMNS, columns);
            parms.setInt(COSName.ROWS, rows);
            img.setItem(COSName.DECODE_PARMS, parms);
            return drawImage(res, "Im", img);
        });
    }

    /** A 100 × 100 image with {@code filter} (JPX, JBIG2) whose data is junk: PDFBox has no codec for it. */
    static byte[] unsupportedCodec(COSName filter) {
        return page((d, res) -> {
            COSStream img = greyImage(d, 100, 100);
            img.setItem(COSName.FILTER, filter);
            return drawImage(res, "Im", img);
        });
    }

    /** A {@code w} × {@code h} DeviceN image of 32 16-bit components (64 bytes a pixel). */
    static byte[] wideSamples(int w, int h) {
        return page((d, res) -> {
            COSStream img = greyImage(d, w, h);
            COSArray names = new COSArray();
            for (int i = 0; i < 32; i++) {
                names.add(COSName.getPDFName("C" + i));
            }
            COSArray cs = new COSArray();
            cs.add(COSName.DEVICEN);
            cs.add(names);
            cs.add(COSName.DEVICEGRAY);
            cs.add(identityFunction(32));
            img.setItem(COSName.COLORSPACE, cs);
            img.setInt(COSName.BITS_PER_COMPONENT, 16);
            return drawImage(res, "Im", img);
        });
    }

    private static COSDictionary identityFunction(int inputs) {
        COSDictionary f = new COSDictionary();
        f.setInt(COSName.FUNCTION_TYPE, 2);
        f.setItem(COSName.DOMAIN, floats(inputs));
        f.setItem(COSName.C0, floats(1));
        f.setItem(COSName.C1, floats(1));
        f.setInt(COSName.N, 1);
        return f;
    }

    private static COSArray floats(int pairs) {
        COSArray a = new COSArray();
        for (int i = 0; i < pairs; i++) {
            a.add(COSInteger.ZERO);
            a.add(COSInteger.ONE);
        }
        return a;
    }

    /** An axial shading whose function is sampled at {@code samples} points of 3 outputs. */
    static byte[] sampledFunction(int samples) {
        return page((d, res) -> {
            COSStream f = stream(d, new byte[16], true);
            f.setInt(COSName.FUNCTION_TYPE, 0);
            f.setItem(COSName.DOMAIN, floats(1));
            f.setItem(COSName.RANGE, floats(3));
            COSArray size = new COSArray();
            size.add(COSInteger.get(samples));
            f.setItem(COSName.SIZE, size);
            f.setInt(COSName.BITS_PER_SAMPLE, 8);
            COSDictionary sh = new COSDictionary();
            sh.setInt(COSName.SHADING_TYPE, 2);
            sh.setItem(COSName.COLORSPACE, COSName.DEVICERGB);
            COSArray coords = new COSArray();
            for (int c : new int[] {0, 0, 50, 0}) {
                coords.add(COSInteger.get(c));
            }
            sh.setItem(COSName.COORDS, coords);
            sh.setItem(COSName.FUNCTION, f);
            COSDictionary shadings = new COSDictionary();
            shadings.setItem(COSName.getPDFName("Sh"), sh);
            res.getCOSObject().setItem(COSName.SHADING, shadings);
            return "/Sh sh\n";
        });
    }

    /** A free-form (type 4) or Coons (type 6) mesh whose data decodes to {@code bytes} zero bytes. */
    static byte[] mesh(int type, long bytes) {
        return page((d, res) -> {
            COSStream sh = d.getDocument().createCOSStream();
            try (OutputStream o = sh.createRawOutputStream()) {
                o.write(deflate(bytes, new byte[0]));
            }
            sh.setItem(COSName.FILTER, COSName.FLATE_DECODE);
            sh.setInt(COSName.SHADING_TYPE, type);
            sh.setItem(COSName.COLORSPACE, COSName.DEVICEGRAY);
            sh.setInt(COSName.BITS_PER_COORDINATE, 8);
            sh.setInt(COSName.BITS_PER_COMPONENT, 8);
            sh.setInt(COSName.BITS_PER_FLAG, 8);
            COSArray decode = new COSArray();
            for (int v : new int[] {0, 50, 0, 50, 0, 1}) {
                decode.add(COSInteger.get(v));
            }
            sh.setItem(COSName.DECODE, decode);
            COSDictionary shadings = new COSDictionary();
            shadings.setItem(COSName.getPDFName("Sh"), sh);
            res.getCOSObject().setItem(COSName.SHADING, shadings);
            return "/Sh sh\n";
        });
    }

    /** A page whose content stream inflates to {@code bytes} bytes (zeros: whitespace to PDFBox). */
    static byte[] contentBomb(long bytes) {
        return page((d, res) -> {
            COSStream s = d.getDocument().createCOSStream();
            try (OutputStream o = s.createRawOutputStream()) {
                o.write(deflate(bytes, new byte[0]));
            }
            s.setItem(COSName.FILTER, COSName.FLATE_DECODE);
            d.getPage(0).getCOSObject().setItem(COSName.CONTENTS, s);
            return null;
        });
    }
}
