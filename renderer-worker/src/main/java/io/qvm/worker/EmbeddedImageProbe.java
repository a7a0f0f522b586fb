package io.qvm.worker;

import java.io.IOException;
import java.io.InputStream;
import java.util.Iterator;
import javax.imageio.ImageIO;
import javax.imageio.ImageReader;
import javax.imageio.stream.ImageInputStream;
import org.apache.batik.util.ParsedURL;

/**
 * Reads the pixel size an embedded raster image declares (PNG/JPEG/GIF/BMP headers only, nothing
 * decoded), so a few kilobytes of {@code data:} PNG that inflate to gigabytes are refused before a
 * decoder allocates them: a decompression bomb would otherwise end the worker with
 * {@link OutOfMemoryError}.
 */
final class EmbeddedImageProbe {

    /** Thrown through Batik's resource check; the renderer answers LIMIT_EXCEEDED. */
    static final class ImageTooLarge extends SecurityException {
        private static final long serialVersionUID = 1L;

        ImageTooLarge() {
            super("embedded image too large");
        }
    }

    private EmbeddedImageProbe() {
    }

    /**
     * The pixels (width × height) the raster image in {@code url} declares, or 0 if it holds no
     * raster image (SVG, font, CSS: not this probe's business) or its header is unreadable (Batik's
     * own decoder then reports a broken image).
     */
    static long declaredPixels(ParsedURL url) {
        try (InputStream in = url.openStream()) {
            return declaredPixels(in);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** The pixels the raster image in {@code in} declares, or 0 as {@link #declaredPixels(ParsedURL)}. */
    static long declaredPixels(InputStream in) {
        try (ImageInputStream iis = ImageIO.createImageInputStream(in)) {
            if (iis == null) {
                return 0;
            }
            Iterator<ImageReader> readers = ImageIO.getImageReaders(iis);
            if (!readers.hasNext()) {
                return 0;
            }
            ImageReader reader = readers.next();
            try {
                reader.setInput(iis, true, true);
                return (long) reader.getWidth(0) * reader.getHeight(0);
            } finally {
                reader.dispose();
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
