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
import org.apache.pdfbox.cos.COSBase;
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

    /** A Flate stream that inflates to {@code bytes} zero bytes. */
    static COSStream zeros(PDDocument d, long bytes) throws IOException {
        COSStream s = d.getDocument().createCOSStream();
        try (OutputStream o = s.createRawOutputStream()) {
            o.write(deflate(bytes, new byte[0]));
        }
        s.setItem(COSName.FILTER, COSName.FLATE_DECODE);
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
        addResource(res, COSName.XOBJECT, name, image);
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
            addResource(res, COSName.XOBJECT, "Fm", form.getCOSObject());
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
            sh.setItem(COSName.COORDS, ints(0, 0, 50, 0));
            sh.setItem(COSName.FUNCTION, f);
            return paintShading(res, sh);
        });
    }

    /** A free-form (type 4) or Coons (type 6) mesh whose data decodes to {@code bytes} zero bytes. */
    static byte[] mesh(int type, long bytes) {
        return page((d, res) -> {
            COSStream sh = zeros(d, bytes);
            sh.setInt(COSName.SHADING_TYPE, type);
            sh.setItem(COSName.COLORSPACE, COSName.DEVICEGRAY);
            sh.setInt(COSName.BITS_PER_COORDINATE, 8);
            sh.setInt(COSName.BITS_PER_COMPONENT, 8);
            sh.setInt(COSName.BITS_PER_FLAG, 8);
            sh.setItem(COSName.DECODE, ints(0, 50, 0, 50, 0, 1));
            return paintShading(res, sh);
        });
    }

    /** Names {@code shading} /Sh in the resources and paints it with {@code sh}. */
    private static String paintShading(PDResources res, COSDictionary shading) {
        addResource(res, COSName.SHADING, "Sh", shading);
        return "/Sh sh\n";
    }

    /** Puts {@code value} into the resources' {@code category} dictionary as {@code name}. */
    private static void addResource(PDResources res, COSName category, String name, COSBase value) {
        COSDictionary entries = res.getCOSObject().getCOSDictionary(category);
        if (entries == null) {
            entries = new COSDictionary();
            res.getCOSObject().setItem(category, entries);
        }
        entries.setItem(COSName.getPDFName(name), value);
    }

    private static COSArray ints(int... values) {
        COSArray a = new COSArray();
        for (int v : values) {
            a.add(COSInteger.get(v));
        }
        return a;
    }

    /** A 1 × 1 grey image whose Flate data inflates to {@code bytes} bytes, as a stream or inline. */
    static byte[] imageDataBomb(long bytes, boolean inline) {
        byte[] data = deflate(bytes, new byte[0]);
        return page((d, res) -> {
            if (inline) {
                return "q 50 0 0 50 0 0 cm BI /W 1 /H 1 /BPC 8 /CS /G /F /Fl /L " + data.length + " ID\n"
                        + new String(data, StandardCharsets.ISO_8859_1) + "\nEI Q\n";
            }
            COSStream img = greyImage(d, 1, 1);
            try (OutputStream o = img.createRawOutputStream()) {
                o.write(data);
            }
            return drawImage(res, "Im", img);
        });
    }

    /** A form XObject whose content stream inflates to {@code bytes} bytes. */
    static byte[] formContentBomb(long bytes) {
        return page((d, res) -> {
            COSStream content = zeros(d, bytes);
            PDFormXObject form = new PDFormXObject(content);
            form.setBBox(new PDRectangle(50, 50));
            form.setResources(new PDResources());
            return drawImage(res, "Fm", form.getCOSObject());
        });
    }

    /**
     * A tiling pattern whose one tile spans {@code side} × {@code side} pt (at 96 dpi that many
     * pixels and a third): PDFBox renders a tile to a raster of its device size.
     */
    static byte[] hugeTile(int side) {
        return page((d, res) -> {
            COSStream tile = stream(d, "0 0 1 rg 0 0 10 10 re f".getBytes(StandardCharsets.ISO_8859_1), false);
            tile.setItem(COSName.TYPE, COSName.PATTERN);
            tile.setInt(COSName.PATTERN_TYPE, 1);
            tile.setInt(COSName.PAINT_TYPE, 1);
            tile.setInt(COSName.TILING_TYPE, 1);
            tile.setItem(COSName.BBOX, new PDRectangle(side, side).getCOSArray());
            tile.setInt(COSName.X_STEP, side);
            tile.setInt(COSName.Y_STEP, side);
            tile.setItem(COSName.RESOURCES, new COSDictionary());
            addResource(res, COSName.PATTERN, "P0", tile);
            return "/Pattern cs /P0 scn 0 0 50 50 re f\n";
        });
    }

    /** An ExtGState soft mask whose luminosity group's bounding box is {@code side} pt square. */
    static byte[] hugeSoftMaskGroup(int side) {
        return page((d, res) -> {
            PDFormXObject group = new PDFormXObject(stream(d,
                    "1 g 0 0 50 50 re f".getBytes(StandardCharsets.ISO_8859_1), false));
            group.setBBox(new PDRectangle(-side / 2f, -side / 2f, side, side));
            group.setResources(new PDResources());
            COSDictionary g = new COSDictionary();
            g.setItem(COSName.TYPE, COSName.GROUP);
            g.setItem(COSName.S, COSName.TRANSPARENCY);
            g.setItem(COSName.CS, COSName.DEVICEGRAY);
            group.getCOSObject().setItem(COSName.GROUP, g);
            COSDictionary mask = new COSDictionary();
            mask.setItem(COSName.TYPE, COSName.MASK);
            mask.setItem(COSName.S, COSName.LUMINOSITY);
            mask.setItem(COSName.G, group.getCOSObject());
            COSDictionary gs = new COSDictionary();
            gs.setItem(COSName.SMASK, mask);
            addResource(res, COSName.EXT_G_STATE, "GS0", gs);
            return "/GS0 gs 1 0 0 rg 0 0 50 50 re f\n";
        });
    }

    /** A Type 3 font whose one glyph draws a 1 × 1 image with a {@code side}² soft mask. */
    static byte[] maskBombInType3Glyph(int side) {
        return page((d, res) -> {
            COSStream glyph = stream(d, "1000 0 d0 q 1000 0 0 1000 0 0 cm /Im Do Q"
                    .getBytes(StandardCharsets.ISO_8859_1), false);
            PDResources glyphRes = new PDResources();
            drawImage(glyphRes, "Im", maskedPixel(d, COSName.SMASK, side));
            COSDictionary procs = new COSDictionary();
            procs.setItem(COSName.getPDFName("a"), glyph);
            COSDictionary encoding = new COSDictionary();
            COSArray differences = new COSArray();
            differences.add(COSInteger.get(97));
            differences.add(COSName.getPDFName("a"));
            encoding.setItem(COSName.DIFFERENCES, differences);
            COSDictionary font = new COSDictionary();
            font.setItem(COSName.TYPE, COSName.FONT);
            font.setItem(COSName.SUBTYPE, COSName.TYPE3);
            font.setItem(COSName.FONT_BBOX, new PDRectangle(1000, 1000).getCOSArray());
            COSArray matrix = new COSArray();
            for (float v : new float[] {0.001f, 0, 0, 0.001f, 0, 0}) {
                matrix.add(new org.apache.pdfbox.cos.COSFloat(v));
            }
            font.setItem(COSName.FONT_MATRIX, matrix);
            font.setItem(COSName.CHAR_PROCS, procs);
            font.setItem(COSName.ENCODING, encoding);
            font.setInt(COSName.FIRST_CHAR, 97);
            font.setInt(COSName.LAST_CHAR, 97);
            COSArray widths = new COSArray();
            widths.add(COSInteger.get(1000));
            font.setItem(COSName.WIDTHS, widths);
            font.setItem(COSName.RESOURCES, glyphRes.getCOSObject());
            addResource(res, COSName.FONT, "F1", font);
            return "BT /F1 50 Tf 0 0 Td (a) Tj ET\n";
        });
    }

    /**
     * An embedded Type 1 font whose private dictionary declares {@code subrs} subroutines (and
     * holds none): fontbox's Type1Parser fills a list of that many slots before reading them.
     */
    static byte[] type1Subrs(int subrs) {
        byte[] clear = ("%!PS-AdobeFont-1.0: Bomb\n4 dict begin\n/FontName /Bomb def\n/FontType 1 def\n"
                + "/FontMatrix [0.001 0 0 0.001 0 0] readonly def\n/Encoding StandardEncoding def\n"
                + "currentdict end\ncurrentfile eexec\n").getBytes(StandardCharsets.ISO_8859_1);
        byte[] secret = eexec(("0000 dup /Private 8 dict dup begin\n/Subrs " + subrs + " array\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        return page((d, res) -> {
            byte[] program = new byte[clear.length + secret.length];
            System.arraycopy(clear, 0, program, 0, clear.length);
            System.arraycopy(secret, 0, program, clear.length, secret.length);
            COSStream file = stream(d, program, true);
            file.setInt(COSName.LENGTH1, clear.length);
            file.setInt(COSName.LENGTH2, secret.length);
            file.setInt(COSName.LENGTH3, 0);
            COSDictionary descriptor = new COSDictionary();
            descriptor.setItem(COSName.TYPE, COSName.FONT_DESC);
            descriptor.setItem(COSName.FONT_NAME, COSName.getPDFName("Bomb"));
            descriptor.setInt(COSName.FLAGS, 32);
            descriptor.setItem(COSName.FONT_BBOX, new PDRectangle(1000, 1000).getCOSArray());
            descriptor.setItem(COSName.FONT_FILE, file);
            COSDictionary font = new COSDictionary();
            font.setItem(COSName.TYPE, COSName.FONT);
            font.setItem(COSName.SUBTYPE, COSName.TYPE1);
            font.setItem(COSName.BASE_FONT, COSName.getPDFName("Bomb"));
            font.setItem(COSName.FONT_DESC, descriptor);
            addResource(res, COSName.FONT, "F1", font);
            return "BT /F1 50 Tf 0 0 Td (a) Tj ET\n";
        });
    }

    /** Type 1 eexec encryption (key 55665), the cipher of a font program's private part. */
    private static byte[] eexec(byte[] plain) {
        byte[] out = new byte[plain.length];
        int r = 55665;
        for (int i = 0; i < plain.length; i++) {
            int c = (plain[i] & 0xFF) ^ (r >> 8);
            out[i] = (byte) c;
            r = ((c + r) * 52845 + 22719) & 0xFFFF;
        }
        return out;
    }

    /** A 50 pt page with {@code /UserUnit} {@code unit} (PDFBox's renderer ignores it). */
    static byte[] userUnit(float unit) {
        return page((d, res) -> {
            d.getPage(0).setUserUnit(unit);
            return "0 0 1 rg 0 0 50 50 re f\n";
        });
    }

    /** A {@code side}² grey image with a soft mask of the same size: ordinary. */
    static byte[] maskedImage(int side) {
        return page((d, res) -> {
            COSStream img = greyImage(d, side, side);
            COSStream mask = greyImage(d, side, side);
            for (COSStream s : new COSStream[] {img, mask}) {
                try (OutputStream o = s.createRawOutputStream()) {
                    o.write(deflate((long) side * side, new byte[0]));
                }
            }
            img.setItem(COSName.SMASK, mask);
            return drawImage(res, "Im", img);
        });
    }

    /** A page whose content stream inflates to {@code bytes} bytes (zeros: whitespace to PDFBox). */
    static byte[] contentBomb(long bytes) {
        return page((d, res) -> {
            COSStream s = zeros(d, bytes);
            d.getPage(0).getCOSObject().setItem(COSName.CONTENTS, s);
            return null;
        });
    }
}
