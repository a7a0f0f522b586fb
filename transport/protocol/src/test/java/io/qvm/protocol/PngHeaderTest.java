package io.qvm.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import java.util.zip.Inflater;
import javax.imageio.IIOImage;
import javax.imageio.ImageIO;
import javax.imageio.ImageWriteParam;
import javax.imageio.ImageWriter;
import javax.imageio.stream.MemoryCacheImageOutputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link PngHeader} on PNGs written by ImageIO (what the worker sends) and on PNGs edited chunk by
 * chunk into what a compromised worker could send instead; and the host's decode of a
 * RENDER_RESULT that uses it ({@link Messages#renderResult(Frame, RenderRequest, Limits)}).
 */
@Tag("unit")
@Tag("security")
class PngHeaderTest {

    private static final Limits LIMITS = new Limits(1 << 20, 1 << 20, 1_000_000, 2000, 10, 30_000);

    static byte[] png(int width, int height, int type) {
        return png(new BufferedImage(width, height, type), false);
    }

    static byte[] png(BufferedImage image, boolean interlaced) {
        ImageWriter w = ImageIO.getImageWritersByFormatName("png").next();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (MemoryCacheImageOutputStream ios = new MemoryCacheImageOutputStream(out)) {
            w.setOutput(ios);
            ImageWriteParam p = w.getDefaultWriteParam();
            p.setProgressiveMode(interlaced ? ImageWriteParam.MODE_DEFAULT : ImageWriteParam.MODE_DISABLED);
            w.write(null, new IIOImage(image, null, null), p);
        } catch (IOException e) {
            throw new AssertionError(e);
        } finally {
            w.dispose();
        }
        return out.toByteArray();
    }

    /** One chunk's bytes with its CRC, as a real encoder writes it. */
    static byte[] chunk(String type, byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(12 + data.length);
        b.putInt(data.length).put(type.getBytes(StandardCharsets.ISO_8859_1)).put(data);
        CRC32 crc = new CRC32();
        crc.update(b.array(), 4, 4 + data.length);
        return b.putInt((int) crc.getValue()).array();
    }

    /** {@code png} with {@code extra} inserted just before IEND (the last 12 bytes). */
    static byte[] beforeIend(byte[] png, byte[] extra) {
        return RawFrames.concat(Arrays.copyOf(png, png.length - 12), extra, Arrays.copyOfRange(png, png.length - 12, png.length));
    }

    /** {@code png} with IHDR byte {@code offset} (absolute) set, the CRC fixed so only the lie remains. */
    static byte[] withIhdr(byte[] png, int offset, int value, int bytes) {
        byte[] p = png.clone();
        ByteBuffer b = ByteBuffer.wrap(p);
        if (bytes == 4) {
            b.putInt(offset, value);
        } else {
            p[offset] = (byte) value;
        }
        CRC32 crc = new CRC32();
        crc.update(p, 12, 17);
        b.putInt(29, (int) crc.getValue());
        return p;
    }

    /** The bytes a decoder inflates for the image: every IDAT's data through zlib. */
    static long inflatedImageData(byte[] png) throws Exception {
        ByteBuffer b = ByteBuffer.wrap(png);
        ByteArrayOutputStream idat = new ByteArrayOutputStream();
        for (int at = 8; at < png.length; ) {
            int len = b.getInt(at);
            if (new String(png, at + 4, 4, StandardCharsets.ISO_8859_1).equals("IDAT")) {
                idat.write(png, at + 8, len);
            }
            at += 12 + len;
        }
        Inflater inf = new Inflater();
        inf.setInput(idat.toByteArray());
        byte[] buf = new byte[1 << 16];
        long total = 0;
        while (!inf.finished()) {
            total += inf.inflate(buf);
        }
        inf.end();
        return total;
    }

    // ---- what the worker writes ---------------------------------------------------------------

    @Test
    void theSignatureIsTheOneEveryPngStartsWithAndCannotBeChanged() {
        byte[] png = png(3, 2, BufferedImage.TYPE_INT_ARGB);
        byte[] sig = PngHeader.signature();
        assertEquals(8, sig.length);
        assertTrue(Arrays.equals(png, 0, 8, sig, 0, 8));
        assertTrue(PngHeader.startsWithSignature(png));
        sig[1] = 'X';
        assertEquals('P', PngHeader.signature()[1], "a copy each time");
        assertTrue(PngHeader.startsWithSignature(PngHeader.signature()));
        assertFalse(PngHeader.startsWithSignature(Arrays.copyOf(png, 7)), "shorter than the signature");
        assertFalse(PngHeader.startsWithSignature(new byte[0]));
        byte[] bent = png.clone();
        bent[7] ^= 1;
        assertFalse(PngHeader.startsWithSignature(bent));
    }

    @Test
    void thePngsTheWorkerWritesAreReadWithTheirSize() {
        PngHeader argb = PngHeader.read(png(300, 200, BufferedImage.TYPE_INT_ARGB));
        assertEquals(new PngHeader(300, 200, 8, 6, false), argb);
        assertEquals(32, argb.bitsPerPixel());
        assertEquals(200L * (1 + 300 * 4), argb.rawBytes());
        assertEquals(new PngHeader(7, 3, 8, 2, false), PngHeader.read(png(7, 3, BufferedImage.TYPE_INT_RGB)));
        assertEquals(new PngHeader(5, 5, 8, 0, false), PngHeader.read(png(5, 5, BufferedImage.TYPE_BYTE_GRAY)));
        PngHeader binary = PngHeader.read(png(9, 2, BufferedImage.TYPE_BYTE_BINARY));
        assertEquals(1, binary.bitDepth());
        assertEquals(2L * (1 + 2), binary.rawBytes(), "9 one-bit pixels pack into 2 bytes a row");
    }

    /** Noise does not compress: ImageIO's image data then sits right at zlib's bound, and passes. */
    @Test
    void incompressibleImagesFromTheEncoderPassTheCompressedSizeBound() throws Exception {
        java.util.Random r = new java.util.Random(11);
        for (int[] size : new int[][] {{1000, 700}, {3, 3}, {4097, 5}}) {
            for (int type : new int[] {BufferedImage.TYPE_INT_ARGB, BufferedImage.TYPE_INT_RGB}) {
                BufferedImage noise = new BufferedImage(size[0], size[1], type);
                for (int y = 0; y < size[1]; y++) {
                    for (int x = 0; x < size[0]; x++) {
                        noise.setRGB(x, y, r.nextInt());
                    }
                }
                byte[] p = png(noise, false);
                PngHeader h = PngHeader.read(p);
                assertEquals(inflatedImageData(p), h.rawBytes());
                assertTrue(p.length > h.rawBytes(), "really incompressible: " + p.length + " for " + h.rawBytes());
            }
        }
    }

    /** rawBytes() is exactly what a decoder inflates, interlaced (Adam7) or not. */
    @ParameterizedTest
    @CsvSource({"1,1", "3,5", "8,8", "33,17", "100,1", "1,100", "257,129"})
    void rawBytesIsExactlyTheInflatedImageData(int width, int height) throws Exception {
        for (int type : new int[] {BufferedImage.TYPE_INT_ARGB, BufferedImage.TYPE_INT_RGB, BufferedImage.TYPE_BYTE_BINARY,
                BufferedImage.TYPE_USHORT_GRAY}) {
            for (boolean interlaced : new boolean[] {false, true}) {
                byte[] p = png(new BufferedImage(width, height, type), interlaced);
                PngHeader h = PngHeader.read(p);
                assertEquals(interlaced, h.interlaced());
                assertEquals(inflatedImageData(p), h.rawBytes(), width + "x" + height + " type " + type
                        + (interlaced ? " interlaced" : ""));
            }
        }
    }

    // ---- what a compromised worker could write ------------------------------------------------

    private static void refused(String says, byte[] png) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PngHeader.read(png));
        assertTrue(e.getMessage().contains(says), e.getMessage());
    }

    @Test
    void theSignatureAndTheIhdrMustBeSound() {
        byte[] good = png(10, 10, BufferedImage.TYPE_INT_ARGB);
        byte[] noSig = good.clone();
        noSig[1] = 'Q';
        refused("signature", noSig);
        refused("too short", Arrays.copyOf(good, 40));
        refused("13-byte IHDR", withIhdr(good, 8, 14, 4));
        refused("13-byte IHDR", withIhdr(good, 12, 'I' << 24 | 'D' << 16 | 'A' << 8 | 'T', 4));
        refused("width and height", withIhdr(good, 16, 0, 4));
        refused("width and height", withIhdr(good, 20, -1, 4));
        refused("bit depth 4 with colour type 6", withIhdr(good, 24, 4, 1));
        refused("colour type 5", withIhdr(good, 25, 5, 1));
        refused("compression, filter or interlace", withIhdr(good, 26, 1, 1));
        refused("compression, filter or interlace", withIhdr(good, 27, 1, 1));
        refused("compression, filter or interlace", withIhdr(good, 28, 2, 1));
    }

    @Test
    void chunksThatADecoderWouldInflateOrThatCarryTextAreRefused() {
        byte[] good = png(10, 10, BufferedImage.TYPE_INT_ARGB);
        Deflater d = new Deflater();
        d.setInput(new byte[1 << 20]);
        d.finish();
        byte[] bomb = new byte[1 << 16];
        int n = d.deflate(bomb);
        d.end();
        byte[] zTxt = RawFrames.concat("Comment\0\0".getBytes(StandardCharsets.ISO_8859_1), Arrays.copyOf(bomb, n));
        refused("type zTXt", beforeIend(good, chunk("zTXt", zTxt)));
        refused("type iCCP", beforeIend(good, chunk("iCCP", zTxt)));
        refused("type iTXt", beforeIend(good, chunk("iTXt", new byte[10])));
        refused("type tEXt", beforeIend(good, chunk("tEXt", "Title\0\u001b[2J".getBytes(StandardCharsets.ISO_8859_1))));
        refused("type quIx", beforeIend(good, chunk("quIx", new byte[3])));
        refused("type \\x1b\\x5b\\x32J", beforeIend(good, chunk("\u001b[2J", new byte[0])));
        refused("second IHDR", beforeIend(good, chunk("IHDR", new byte[13])));
        byte[] allowed = beforeIend(good, RawFrames.concat(chunk("pHYs", new byte[9]), chunk("tIME", new byte[7])));
        assertEquals(new PngHeader(10, 10, 8, 6, false), PngHeader.read(allowed), "uncompressed ancillary chunks are fine");
    }

    @Test
    void theChunkListMustEndWithIendAndNothingAfterIt() {
        byte[] good = png(10, 10, BufferedImage.TYPE_INT_ARGB);
        refused("no IEND", Arrays.copyOf(good, good.length - 12));
        refused("IEND is not an empty chunk at its very end", RawFrames.concat(good, new byte[100]));
        refused("IEND is not an empty chunk at its very end", beforeIend(good, chunk("IEND", new byte[0])));
        byte[] past = good.clone();
        ByteBuffer.wrap(past).putInt(33, 0x7fff_0000); // the first chunk after IHDR claims 2 GiB
        refused("runs past the end", past);
        byte[] noIdat = RawFrames.concat(Arrays.copyOf(good, 33), chunk("IEND", new byte[0]));
        refused("no image data", noIdat);
    }

    /** A 1×1 image cannot come with a megabyte of compressed data for a caller to inflate. */
    @Test
    void imageDataLargerThanZlibNeedsForTheImageIsRefused() {
        byte[] tiny = png(1, 1, BufferedImage.TYPE_INT_ARGB);
        byte[] padded = beforeIend(tiny, chunk("IDAT", new byte[1 << 20]));
        refused("more than the", padded);
        PngHeader h = PngHeader.read(tiny);
        assertEquals(5, h.rawBytes());
        assertTrue(PngHeader.maxCompressedBytes(5) < 100);
        assertTrue(PngHeader.maxCompressedBytes(Long.MAX_VALUE) == Long.MAX_VALUE, "saturates");
        long stored = new PngHeader(65_535, 65_535, 16, 6, false).rawBytes();
        assertTrue(PngHeader.maxCompressedBytes(stored) > stored, "at least the stored size");
        assertTrue(new PngHeader(Integer.MAX_VALUE, Integer.MAX_VALUE, 16, 6, true).rawBytes() > 0, "no overflow");
    }

    // ---- the host's decode of RENDER_RESULT ---------------------------------------------------

    private static Frame result(byte[] png, int width, int height) {
        return Messages.toFrame(new RenderResult(png, width, height, 3), 1);
    }

    @Test
    void anHonestResultWithinTheLimitsIsReturned() {
        byte[] p = png(300, 200, BufferedImage.TYPE_INT_ARGB);
        RenderResult r = Messages.renderResult(result(p, 300, 200), RenderRequest.svg(new byte[1]), LIMITS);
        assertSame(p, r.png());
        assertEquals(300, r.width());
        Messages.renderResult(result(p, 300, 200), RenderRequest.svg(new byte[1]).withSize(300, 0), LIMITS);
        Messages.renderResult(result(p, 300, 200), RenderRequest.svg(new byte[1]).withSize(300, 200), LIMITS);
    }

    @Test
    void aResultThatLiesAboutItsSizeOrBreaksTheLimitsOrTheRequestIsRefused() {
        RenderRequest any = RenderRequest.svg(new byte[1]);
        byte[] big = png(3000, 10, BufferedImage.TYPE_INT_ARGB);
        IllegalArgumentException lie = assertThrows(IllegalArgumentException.class,
                () -> Messages.renderResult(result(big, 30, 10), any, LIMITS));
        assertEquals("the PNG is 3000x10 but the header says 30x10", lie.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Messages.renderResult(result(big, 3000, 10), any,
                LIMITS)).getMessage().contains("a side above maxSide 2000"));
        byte[] many = png(1001, 1000, BufferedImage.TYPE_BYTE_GRAY);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Messages.renderResult(result(many, 1001, 1000), any,
                LIMITS)).getMessage().contains("1001000 pixels, above maxPixels 1000000"));
        byte[] p = png(300, 200, BufferedImage.TYPE_INT_ARGB);
        assertEquals("the PNG is 300x200 but 301x? was asked for", assertThrows(IllegalArgumentException.class,
                () -> Messages.renderResult(result(p, 300, 200), any.withSize(301, 0), LIMITS)).getMessage());
        assertEquals("the PNG is 300x200 but ?x199 was asked for", assertThrows(IllegalArgumentException.class,
                () -> Messages.renderResult(result(p, 300, 200), any.withSize(0, 199), LIMITS)).getMessage());
        byte[] notPng = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0};
        assertThrows(IllegalArgumentException.class, () -> Messages.renderResult(result(notPng, 1, 1), any, LIMITS),
                "a signature alone is not a PNG");
        assertFalse(Messages.renderResult(result(p, 300, 200), any, LIMITS).png().length == 0);
    }
}
