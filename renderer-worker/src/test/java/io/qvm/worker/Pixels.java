package io.qvm.worker;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import javax.imageio.ImageIO;

/** Reads rendered PNGs back and looks at their pixels. */
final class Pixels {

    private Pixels() {
    }

    static BufferedImage decode(byte[] png) {
        try {
            BufferedImage img = ImageIO.read(new ByteArrayInputStream(png));
            if (img == null) {
                throw new IllegalArgumentException("not a PNG");
            }
            return img;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** ARGB at (x, y). */
    static int at(BufferedImage img, int x, int y) {
        return img.getRGB(x, y);
    }

    /** Pixels in the rectangle that differ clearly from {@code background} (ARGB). */
    static int differing(BufferedImage img, int x0, int y0, int x1, int y1, int background) {
        int n = 0;
        for (int y = y0; y < y1; y++) {
            for (int x = x0; x < x1; x++) {
                if (distance(img.getRGB(x, y), background) > 96) {
                    n++;
                }
            }
        }
        return n;
    }

    /** Sum of per-channel differences (alpha included). */
    static int distance(int a, int b) {
        int d = 0;
        for (int shift = 0; shift < 32; shift += 8) {
            d += Math.abs((a >>> shift & 0xFF) - (b >>> shift & 0xFF));
        }
        return d;
    }

    /** Whether (x, y) is close to {@code argb}. */
    static boolean near(BufferedImage img, int x, int y, int argb) {
        return distance(img.getRGB(x, y), argb) < 48;
    }
}
