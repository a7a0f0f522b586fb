package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.imageio.ImageIO;
import org.apache.pdfbox.cos.COSArray;
import org.apache.pdfbox.cos.COSBase;
import org.apache.pdfbox.cos.COSDictionary;
import org.apache.pdfbox.cos.COSName;
import org.apache.pdfbox.cos.COSObject;
import org.apache.pdfbox.cos.COSStream;
import org.apache.pdfbox.filter.Filter;
import org.apache.pdfbox.filter.FilterFactory;
import org.apache.pdfbox.pdmodel.PDPage;

/**
 * The costs a PDF page declares, estimated from its objects before PDFBox allocates for them
 * (LIMIT_EXCEEDED past a limit). PDFBox 3 sizes its buffers from what the document says:
 *
 * <ul>
 *   <li>every filtered stream but the page's own content is decoded into an in-memory buffer of
 *       whatever size the data inflates to (forms, patterns, glyph procedures, images, fonts,
 *       functions, ICC profiles, meshes): each one's decoded size is counted here by decoding it
 *       into a counter that holds nothing, and capped
 *       ({@link LimitChecker#pdfMaxDecodedStreamBytes()}, or what an image's size needs). The
 *       page's content is parsed as it is decoded, so only its time counts, which the watchdog
 *       bounds ({@link CancellableRead}; measured: 600 MiB of it render in about two seconds);</li>
 *   <li>an image is read at the largest of its own, its {@code /SMask}'s and its {@code /Mask}'s
 *       sizes (the smaller is scaled up), at four bytes a pixel or its own sample size if more;
 *       a CCITT stream at its {@code /Columns} × {@code /Rows}; an inline DCT image at the size
 *       its JPEG frame header declares (an image stream is read within its dictionary's size):
 *       all within {@link LimitChecker#maxSourceImagePixels()};</li>
 *   <li>a sampled function ({@code /FunctionType 0}) allocates its whole table of samples from
 *       {@code /Size}; a mesh shading (types 4–7) keeps every triangle it reads, and each patch
 *       is cut into up to 512 triangles; an embedded Type 1 font fills a list as long as its
 *       {@code /Subrs} declares: together within {@link LimitChecker#pdfMaxTableBytes()}.</li>
 * </ul>
 * The walk starts from the page's resources and annotation appearances, so images and functions
 * inside forms, patterns, Type 3 glyphs, soft-mask groups and appearance streams are found too;
 * it never follows {@code /Parent} or {@code /P} (the rest of the document). Inline images live
 * in content streams, so the page drawer checks each with {@link #checkImage} before PDFBox
 * parses it.
 */
final class PdfPreflight {

    /** Most objects one page may reach; past it the page is refused (the walk itself is a cost). */
    static final int MAX_OBJECTS = 500_000;

    private static final Set<COSName> SKIPPED_KEYS = Set.of(COSName.PARENT, COSName.P, COSName.METADATA,
            COSName.getPDFName("Popup"), COSName.getPDFName("IRT"), COSName.DEST, COSName.A);
    private static final Set<String> CODECS = Set.of("DCTDecode", "DCT", "JPXDecode", "JBIG2Decode",
            "CCITTFaxDecode", "CCF");
    /** What PDFBox keeps per triangle of a mesh (points, colours, object headers), rounded up. */
    private static final long BYTES_PER_TRIANGLE = 256;
    /** A patch of a type 6/7 mesh is divided into at most 16 × 16 cells of two triangles. */
    private static final long TRIANGLES_PER_PATCH = 512;

    private final LimitChecker limits;
    private long tableBytes;

    private PdfPreflight(LimitChecker limits) {
        this.limits = limits;
    }

    /** Walks what {@code page} can draw; throws LIMIT_EXCEEDED at the first cost above its limit. */
    static void check(PDPage page, LimitChecker limits) throws RenderException {
        PdfPreflight p = new PdfPreflight(limits);
        Deque<COSBase> todo = new ArrayDeque<>();
        COSDictionary dict = page.getCOSObject();
        if (page.getResources() != null) {
            todo.push(page.getResources().getCOSObject());
        }
        // The page's own content is not walked: PDFBox parses it as it decodes it.
        COSArray annots = dict.getCOSArray(COSName.ANNOTS);
        if (annots != null) {
            for (COSBase a : annots) {
                if (a instanceof COSObject o) {
                    a = o.getObject();
                }
                if (a instanceof COSDictionary ad) {
                    push(todo, ad.getDictionaryObject(COSName.AP));
                }
            }
        }
        p.walk(todo);
    }

    private static void push(Deque<COSBase> todo, COSBase b) {
        if (b instanceof COSObject o) {
            b = o.getObject();
        }
        if (b instanceof COSDictionary || b instanceof COSArray) {
            todo.push(b);
        }
    }

    private void walk(Deque<COSBase> todo) throws RenderException {
        Map<COSBase, Boolean> seen = new IdentityHashMap<>();
        while (!todo.isEmpty()) {
            COSBase b = todo.pop();
            if (seen.put(b, Boolean.TRUE) != null) {
                continue;
            }
            if (seen.size() > MAX_OBJECTS) {
                throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "PDF page reaches more than " + MAX_OBJECTS
                        + " objects");
            }
            if (b instanceof COSArray a) {
                for (COSBase e : a) {
                    push(todo, e);
                }
            } else if (b instanceof COSDictionary d) {
                visit(d);
                for (Map.Entry<COSName, COSBase> e : d.entrySet()) {
                    if (!SKIPPED_KEYS.contains(e.getKey())) {
                        push(todo, e.getValue());
                    }
                }
            }
        }
    }

    private void visit(COSDictionary d) throws RenderException {
        if (COSName.IMAGE.equals(d.getCOSName(COSName.SUBTYPE))) {
            checkImage(d, null, limits);
            return;
        }
        if (d.getInt(COSName.FUNCTION_TYPE, -1) == 0) {
            checkSampledFunction(d);
        }
        if (d instanceof COSStream s) {
            long decoded;
            try (InputStream raw = s.createRawInputStream()) {
                decoded = decodedSize(s, raw, limits.pdfMaxDecodedStreamBytes());
            } catch (IOException e) {
                return; // unreadable: PDFBox reports it when it reads the stream
            }
            int meshType = d.getInt(COSName.SHADING_TYPE, 0);
            if (meshType >= 4 && meshType <= 7) {
                checkMesh(d, meshType, decoded);
            }
            if (d.containsKey(COSName.LENGTH2)) {
                checkType1Font(s);
            }
        }
    }

    /**
     * A Type 1 font program (FontFile, the one with {@code /Length2}): fontbox's parser fills a
     * list with as many slots as {@code /Subrs n array} declares before it reads a single one.
     */
    private void checkType1Font(COSStream s) throws RenderException {
        byte[] program;
        try (InputStream raw = s.createRawInputStream()) {
            BoundedStage out = new BoundedStage(limits.pdfMaxDecodedStreamBytes());
            decode(raw, s, filters(s), out, limits.pdfMaxDecodedStreamBytes());
            program = out.toByteArray();
        } catch (IOException | RuntimeException e) {
            return; // unreadable or past the cap, which the decoded-size check has refused already
        }
        String text = Type1Private.decrypt(program);
        for (int i = text.indexOf("/Subrs"); i >= 0; i = text.indexOf("/Subrs", i + 1)) {
            long declared = Type1Private.integerAfter(text, i + "/Subrs".length());
            // A reference per slot, and the list's copy as it grows.
            addTable(declared * 12, "a PDF font's subroutine table");
        }
    }

    /**
     * Checks an image's cost: its declared size and sample size with its masks', and its decoded
     * size. {@code inlineData} is the encoded data of an inline image, {@code null} for an image
     * stream.
     */
    static void checkImage(COSDictionary img, byte[] inlineData, LimitChecker limits) throws RenderException {
        long w = dim(img, COSName.WIDTH, COSName.W);
        long h = dim(img, COSName.HEIGHT, COSName.H);
        long bytesPerPixel = Math.max(4, (rawBitsPerPixel(img) + 7) / 8);
        for (COSName key : List.of(COSName.SMASK, COSName.MASK)) {
            if (img.getDictionaryObject(key) instanceof COSStream mask) {
                w = Math.max(w, dim(mask, COSName.WIDTH, COSName.W));
                h = Math.max(h, dim(mask, COSName.HEIGHT, COSName.H));
                checkImageData(mask, null, limits);
            }
        }
        if (w * h > limits.maxSourceImagePixels() || w * h * bytesPerPixel / 4 > limits.maxSourceImagePixels()) {
            throw new EmbeddedImageProbe.ImageTooLarge();
        }
        checkImageData(img, inlineData, limits);
    }

    /**
     * An image's data may decode to what its size needs and a little more, and its codec to no
     * more than the pixel limit.
     */
    private static void checkImageData(COSDictionary img, byte[] inlineData, LimitChecker limits)
            throws RenderException {
        long w = dim(img, COSName.WIDTH, COSName.W);
        long h = dim(img, COSName.HEIGHT, COSName.H);
        long expected = (w * rawBitsPerPixel(img) + 7) / 8 * h;
        long cap = Math.max(limits.pdfMaxDecodedStreamBytes(), expected + expected / 8 + (64 << 10));
        try (InputStream raw = inlineData != null ? new ByteArrayInputStream(inlineData)
                : img instanceof COSStream s ? s.createRawInputStream() : InputStream.nullInputStream()) {
            decodedSize(img, raw, cap);
        } catch (IOException e) {
            return; // unreadable: PDFBox reports it when it reads the image
        }
        checkCodec(img, inlineData, limits);
    }

    private static long dim(COSDictionary d, COSName key, COSName abbreviation) {
        return Math.max(1, d.getInt(key, abbreviation, 1));
    }

    /** Bits a pixel of the image's raw samples takes, from its colour space as far as it tells. */
    private static long rawBitsPerPixel(COSDictionary img) {
        if (img.getBoolean(COSName.IMAGE_MASK, COSName.IM, false)) {
            return 1;
        }
        long bpc = Math.max(1, Math.min(32, img.getInt(COSName.BITS_PER_COMPONENT, COSName.BPC, 8)));
        return bpc * components(img.getDictionaryObject(COSName.COLORSPACE, COSName.CS));
    }

    private static long components(COSBase cs) {
        if (cs instanceof COSName n) {
            String s = n.getName();
            return s.equals("DeviceGray") || s.equals("G") || s.equals("Indexed") || s.equals("I") ? 1
                    : s.equals("DeviceCMYK") || s.equals("CMYK") ? 4 : 3;
        }
        if (cs instanceof COSArray a && a.size() > 0 && a.getObject(0) instanceof COSName family) {
            String s = family.getName();
            if (s.equals("Indexed") || s.equals("I") || s.equals("Separation")) {
                return 1;
            }
            if (s.equals("DeviceN") && a.getObject(1) instanceof COSArray names) {
                return Math.max(1, names.size());
            }
            if (s.equals("ICCBased") && a.getObject(1) instanceof COSStream icc) {
                return Math.max(1, Math.min(32, icc.getInt(COSName.N, 3)));
            }
        }
        return 3;
    }

    /** The size a DCT or CCITT codec will decode to, which need not be the dictionary's. */
    private static void checkCodec(COSDictionary img, byte[] inlineData, LimitChecker limits) throws RenderException {
        List<COSName> filters = filters(img);
        int codec = -1;
        for (int i = 0; i < filters.size() && codec < 0; i++) {
            if (CODECS.contains(filters.get(i).getName())) {
                codec = i;
            }
        }
        if (codec < 0) {
            return;
        }
        String name = filters.get(codec).getName();
        if (name.startsWith("CCITT") || name.equals("CCF")) {
            COSDictionary parms = decodeParms(img, codec);
            long cols = parms == null ? 1728 : Math.max(1, parms.getInt(COSName.COLUMNS, 1728));
            long rows = Math.max(dim(img, COSName.HEIGHT, COSName.H), parms == null ? 0 : parms.getInt(COSName.ROWS, 0));
            if (cols * rows > limits.maxSourceImagePixels() * 8) {
                throw new EmbeddedImageProbe.ImageTooLarge();
            }
        } else if (name.startsWith("DCT") && inlineData != null) {
            // PDFBox reads an image stream's JPEG within the dictionary's size (its source region),
            // but decodes an inline image's whole JPEG as soon as it parses it.
            byte[] jpeg = decodeTo(img, inlineData, filters.subList(0, codec), limits.pdfMaxDecodedStreamBytes());
            if (jpeg != null) {
                probeJpeg(jpeg, limits.maxSourceImagePixels());
            }
        }
        // JPX and JBIG2 need ImageIO plugins that the worker does not ship: PDFBox skips such images.
    }

    /** An unreadable header declares nothing: PDFBox reports the image as broken and goes on. */
    private static void probeJpeg(byte[] jpeg, long maxPixels) {
        if (EmbeddedImageProbe.declaredPixels(new ByteArrayInputStream(jpeg)) > maxPixels) {
            throw new EmbeddedImageProbe.ImageTooLarge();
        }
    }

    private void checkSampledFunction(COSDictionary f) throws RenderException {
        COSArray size = f.getCOSArray(COSName.SIZE);
        COSArray range = f.getCOSArray(COSName.RANGE);
        if (size == null) {
            return;
        }
        long entries = 1;
        for (int i = 0; i < size.size(); i++) {
            entries *= Math.max(1, size.getInt(i));
            if (entries > Integer.MAX_VALUE) {
                throw tooLarge("a PDF sampled function is above the memory limit");
            }
        }
        long outputs = range == null ? 1 : Math.max(1, range.size() / 2);
        // PDFBox holds an int[outputs] per entry: an array header, the ints and the reference to it.
        addTable(entries * (16 + 8 * ((outputs + 1) / 2) + 4), "a PDF sampled function");
    }

    private void checkMesh(COSDictionary d, int type, long decoded) throws RenderException {
        long coord = Math.max(1, d.getInt(COSName.BITS_PER_COORDINATE, 1));
        long comp = Math.max(1, d.getInt(COSName.BITS_PER_COMPONENT, 1));
        long flag = type == 5 ? 0 : Math.max(1, d.getInt(COSName.BITS_PER_FLAG, 2));
        long colours = d.getDictionaryObject(COSName.FUNCTION) != null ? 1
                : components(d.getDictionaryObject(COSName.COLORSPACE, COSName.CS));
        long bits;
        long triangles;
        if (type <= 5) {
            // A vertex that continues a strip (or lattice) adds a triangle.
            bits = flag + 2 * coord + colours * comp;
            triangles = 1;
        } else {
            // A patch that continues the previous one carries 8 (type 6) or 12 (type 7) new points
            // and 2 new colours.
            bits = flag + (type == 6 ? 8 : 12) * 2 * coord + 2 * colours * comp;
            triangles = TRIANGLES_PER_PATCH;
        }
        long elements = decoded * 8 / Math.max(1, bits);
        addTable(elements * triangles * BYTES_PER_TRIANGLE, "a PDF mesh shading");
    }

    private void addTable(long bytes, String what) throws RenderException {
        tableBytes += bytes;
        if (bytes < 0 || tableBytes > limits.pdfMaxTableBytes()) {
            throw tooLarge(what + " is above the memory limit");
        }
    }

    /** The size {@code raw}, the data of {@code d}, decodes to up to its codec filter; refused past {@code cap}. */
    private static long decodedSize(COSDictionary d, InputStream raw, long cap) throws RenderException {
        CountingSink sink = new CountingSink(cap);
        try {
            decode(raw, d, filters(d), sink, cap);
        } catch (DecodedTooLarge | StageTooLarge e) {
            throw tooLarge("a PDF stream decodes to more than " + cap + " bytes");
        } catch (IOException | RuntimeException e) {
            // Broken data: PDFBox reports it itself when it reads the stream.
        }
        return sink.count;
    }

    /** Decodes the non-codec filters in front of the first codec into {@code out}. */
    private static void decode(InputStream in, COSDictionary params, List<COSName> filters, OutputStream out,
            long cap) throws IOException {
        for (int i = 0; i < filters.size(); i++) {
            if (CODECS.contains(filters.get(i).getName())) {
                in.transferTo(out);
                return;
            }
            Filter filter = FilterFactory.INSTANCE.getFilter(filters.get(i));
            if (i == filters.size() - 1) {
                filter.decode(in, out, params, i);
                return;
            }
            ByteArrayOutputStream stage = new BoundedStage(cap);
            filter.decode(in, stage, params, i);
            in = new ByteArrayInputStream(stage.toByteArray());
        }
        in.transferTo(out);
    }

    private static byte[] decodeTo(COSDictionary img, byte[] inlineData, List<COSName> before, long cap) {
        try (InputStream raw = inlineData != null ? new ByteArrayInputStream(inlineData)
                : img instanceof COSStream s ? s.createRawInputStream() : null) {
            if (raw == null) {
                return null;
            }
            BoundedStage out = new BoundedStage(cap);
            decode(raw, img, before, out, cap);
            return out.toByteArray();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static List<COSName> filters(COSDictionary d) {
        COSBase f = d.getDictionaryObject(COSName.FILTER, COSName.F);
        if (f instanceof COSName n) {
            return List.of(n);
        }
        if (f instanceof COSArray a) {
            List<COSName> names = new ArrayList<>();
            for (int i = 0; i < a.size(); i++) {
                if (a.getObject(i) instanceof COSName n) {
                    names.add(n);
                }
            }
            return names;
        }
        return Collections.emptyList();
    }

    private static COSDictionary decodeParms(COSDictionary d, int index) {
        COSBase p = d.getDictionaryObject(COSName.DECODE_PARMS, COSName.DP);
        if (p instanceof COSDictionary pd) {
            return pd;
        }
        if (p instanceof COSArray a && index < a.size() && a.getObject(index) instanceof COSDictionary pd) {
            return pd;
        }
        return null;
    }

    private static RenderException tooLarge(String message) {
        return new RenderException(ErrorCode.LIMIT_EXCEEDED, message);
    }

    /** Decoding went past the cap. */
    private static final class DecodedTooLarge extends IOException {
        private static final long serialVersionUID = 1L;
    }

    /** Counts the bytes written to it and holds none; fails past its cap. */
    private static final class CountingSink extends OutputStream {
        private final long cap;
        private long count;

        CountingSink(long cap) {
            this.cap = cap;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            count += len;
            if (count > cap) {
                throw new DecodedTooLarge();
            }
        }
    }

    /** An in-memory stage between two filters, failing past its cap. */
    private static final class BoundedStage extends ByteArrayOutputStream {
        private final long cap;

        BoundedStage(long cap) {
            this.cap = cap;
        }

        @Override
        public synchronized void write(int b) {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            if ((long) count + len > cap) {
                throw new StageTooLarge();
            }
            super.write(b, off, len);
        }
    }

    /** Unchecked, because {@link ByteArrayOutputStream#write(byte[], int, int)} declares nothing. */
    private static final class StageTooLarge extends RuntimeException {
        private static final long serialVersionUID = 1L;
    }
}
