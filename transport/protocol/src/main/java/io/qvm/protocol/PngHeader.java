package io.qvm.protocol;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;

/**
 * The header of a PNG, read and checked without decoding the image: what the host looks at
 * before it hands a worker's PNG to a caller (the worker may be compromised, so its PNG is as
 * untrusted as the document it rendered).
 *
 * <pre>
 *  offset  size  field
 *  ------  ----  ------------------------------------------------------------------
 *       0     8  signature        89 50 4E 47 0D 0A 1A 0A
 *       8     4  length           13: the IHDR chunk comes first
 *      12     4  type             "IHDR"
 *      16     4  width            1..2^31-1
 *      20     4  height           1..2^31-1
 *      24     1  bit depth        per colour type: 0 grey 1,2,4,8,16 · 2 RGB 8,16 · 3 palette 1,2,4,8
 *      25     1  colour type                       · 4 grey+alpha 8,16 · 6 RGBA 8,16
 *      26     1  compression      0 (zlib)
 *      27     1  filter method    0
 *      28     1  interlace        0 none, 1 Adam7
 *      29     4  CRC of the chunk
 *      33        chunks           length (4, ≤ 2^31-1), type (4), data, CRC (4) … then IEND (empty), last
 * </pre>
 *
 * {@link #read} checks the signature and the IHDR fields above, then walks the chunk list (their
 * lengths and types only; nothing is inflated and no CRC is computed): every length stays inside
 * the array, there is at least one IDAT, the PNG ends with IEND and nothing after it, and only the
 * chunks of {@link #ALLOWED_CHUNKS} occur. Those are the critical chunks and uncompressed ancillary
 * ones; text (tEXt, zTXt, iTXt), ICC profiles (iCCP), private and unknown chunks are refused, so
 * a decoder that reads a checked PNG has nothing to inflate but its image data. That data is at
 * most {@link #rawBytes()} once inflated, and its compressed size is checked against the most
 * zlib can need for that many bytes ({@link #maxCompressedBytes(long)}), so a small image cannot
 * come with a large compressed stream either.
 *
 * @param width pixels, ≥ 1
 * @param height pixels, ≥ 1
 * @param bitDepth bits per sample (per palette index for colour type 3)
 * @param colourType 0, 2, 3, 4 or 6
 * @param interlaced whether Adam7 interlacing is used
 */
public record PngHeader(int width, int height, int bitDepth, int colourType, boolean interlaced) {

    /** The chunk types a checked PNG may hold: critical, and ancillary chunks with nothing to inflate. */
    public static final Set<String> ALLOWED_CHUNKS = Set.of("IHDR", "PLTE", "IDAT", "IEND", "tRNS", "cHRM", "gAMA",
            "sBIT", "sRGB", "bKGD", "pHYs", "tIME");

    private static final byte[] SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    private static final int IHDR_END = 33;

    /** The eight bytes every PNG starts with (a copy). */
    public static byte[] signature() {
        return SIGNATURE.clone();
    }

    /** Whether {@code png} starts with {@link #signature() the PNG signature}. */
    public static boolean startsWithSignature(byte[] png) {
        return png.length >= SIGNATURE.length
                && Arrays.equals(png, 0, SIGNATURE.length, SIGNATURE, 0, SIGNATURE.length);
    }

    public PngHeader {
        if (width < 1 || height < 1) {
            throw new IllegalArgumentException("width and height must be at least 1");
        }
        if (!validDepth(colourType, bitDepth)) {
            throw new IllegalArgumentException("bit depth " + bitDepth + " with colour type " + colourType
                    + " is not a PNG format");
        }
    }

    /**
     * Reads the header of {@code png} and checks the whole chunk structure as the class comment
     * describes, without inflating anything.
     *
     * @throws IllegalArgumentException naming the first thing that is not as a PNG must be
     */
    public static PngHeader read(byte[] png) {
        if (png.length < IHDR_END + 12) {
            throw new IllegalArgumentException("a PNG of " + png.length + " bytes is too short for its header and IEND");
        }
        ByteBuffer b = ByteBuffer.wrap(png);
        if (!startsWithSignature(png)) {
            throw new IllegalArgumentException("the PNG signature is missing");
        }
        if (b.getInt(8) != 13 || !"IHDR".equals(type(png, 12))) {
            throw new IllegalArgumentException("the PNG does not start with a 13-byte IHDR chunk");
        }
        int width = b.getInt(16);
        int height = b.getInt(20);
        if (width < 1 || height < 1) {
            throw new IllegalArgumentException("the IHDR's width and height must be 1..2^31-1");
        }
        int depth = png[24] & 0xFF;
        int colour = png[25] & 0xFF;
        if (!validDepth(colour, depth)) {
            throw new IllegalArgumentException("the IHDR's bit depth " + depth + " with colour type " + colour
                    + " is not a PNG format");
        }
        if (png[26] != 0 || png[27] != 0 || (png[28] & 0xFF) > 1) {
            throw new IllegalArgumentException("the IHDR's compression, filter or interlace method is unknown");
        }
        PngHeader header = new PngHeader(width, height, depth, colour, png[28] == 1);
        header.checkChunks(b);
        return header;
    }

    private void checkChunks(ByteBuffer b) {
        long idat = 0;
        int at = IHDR_END;
        while (true) {
            if (b.limit() - at < 12) {
                throw new IllegalArgumentException("the PNG ends inside a chunk header at byte " + at + " (no IEND)");
            }
            long length = b.getInt(at) & 0xFFFFFFFFL;
            String type = type(b.array(), at + 4);
            if (length > Integer.MAX_VALUE || length > b.limit() - at - 12L) {
                throw new IllegalArgumentException("a " + printable(type) + " chunk at byte " + at
                        + " runs past the end of the PNG");
            }
            if (!ALLOWED_CHUNKS.contains(type)) {
                throw new IllegalArgumentException("the PNG has a chunk of type " + printable(type)
                        + "; only " + String.join(", ", ALLOWED_CHUNKS.stream().sorted().toList()) + " are accepted");
            }
            if (type.equals("IHDR")) {
                throw new IllegalArgumentException("the PNG has a second IHDR chunk");
            }
            if (type.equals("IDAT")) {
                idat += length;
            }
            at += 12 + (int) length;
            if (type.equals("IEND")) {
                if (length != 0 || at != b.limit()) {
                    throw new IllegalArgumentException("the PNG's IEND is not an empty chunk at its very end");
                }
                break;
            }
        }
        if (idat == 0) {
            throw new IllegalArgumentException("the PNG has no image data (IDAT)");
        }
        long bound = maxCompressedBytes(rawBytes());
        if (idat > bound) {
            throw new IllegalArgumentException("the PNG's image data is " + idat + " bytes compressed, more than the "
                    + bound + " that zlib needs at most for the " + rawBytes() + " bytes its IHDR implies");
        }
    }

    /** Bits of one pixel: the samples per pixel of the colour type times the bit depth. */
    public int bitsPerPixel() {
        int samples = switch (colourType) {
            case 2 -> 3;
            case 4 -> 2;
            case 6 -> 4;
            default -> 1; // grey, palette
        };
        return samples * bitDepth;
    }

    /**
     * The size of the image data once inflated: one filter byte and the packed pixels of each
     * row, for each of the seven Adam7 passes when interlaced. This is exactly what a decoder
     * inflates for the image; the decoded raster is width × height × at most 8 bytes.
     */
    public long rawBytes() {
        if (!interlaced) {
            return rowBytes(width, height);
        }
        // Adam7: pass p covers the pixels at (xStart + k·xStep, yStart + m·yStep)
        int[][] passes = {{0, 8, 0, 8}, {4, 8, 0, 8}, {0, 4, 4, 8}, {2, 4, 0, 4}, {0, 2, 2, 4}, {1, 2, 0, 2},
                {0, 1, 1, 2}};
        long total = 0;
        for (int[] p : passes) {
            long w = ((long) width - p[0] + p[1] - 1) / p[1];
            long h = ((long) height - p[2] + p[3] - 1) / p[3];
            if (w > 0 && h > 0) {
                long pass = rowBytes(w, h);
                total = total > Long.MAX_VALUE - pass ? Long.MAX_VALUE : total + pass;
            }
        }
        return total;
    }

    /** {@code h} rows of {@code w} pixels and a filter byte each; saturates at Long.MAX_VALUE (never reached for a sane PNG). */
    private long rowBytes(long w, long h) {
        long row = 1 + (w * bitsPerPixel() + 7) / 8; // w < 2^31, at most 64 bits per pixel: no overflow
        return h > Long.MAX_VALUE / row ? Long.MAX_VALUE : h * row;
    }

    /**
     * The most bytes zlib can need to hold {@code raw} bytes: stored blocks at worst, 5 bytes of
     * block header per 16 KiB (zlib's own {@code compressBound} assumes 5 per 16 KiB plus a
     * little), the 2-byte header and the 4-byte Adler-32, with some room to spare.
     */
    public static long maxCompressedBytes(long raw) {
        if (raw < 0) {
            throw new IllegalArgumentException("raw must not be negative, was " + raw);
        }
        return raw > Long.MAX_VALUE / 2 ? Long.MAX_VALUE : raw + 5 * (raw / 16_383 + 1) + 6 + 64;
    }

    private static boolean validDepth(int colourType, int depth) {
        return switch (colourType) {
            case 0 -> depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
            case 3 -> depth == 1 || depth == 2 || depth == 4 || depth == 8;
            case 2, 4, 6 -> depth == 8 || depth == 16;
            default -> false;
        };
    }

    private static String type(byte[] png, int at) {
        return new String(png, at, 4, StandardCharsets.ISO_8859_1);
    }

    /** A chunk type as it may be shown: letters as they are, anything else as a hex byte. */
    private static String printable(String type) {
        StringBuilder s = new StringBuilder();
        for (char c : type.toCharArray()) {
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
                s.append(c);
            } else {
                s.append(String.format("\\x%02x", (int) c));
            }
        }
        return s.toString();
    }
}
