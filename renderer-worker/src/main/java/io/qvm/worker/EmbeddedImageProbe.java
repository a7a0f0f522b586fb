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

    /** Throws {@link ImageTooLarge} if {@code url} holds a raster image above {@code maxPixels}. */
    static void check(ParsedURL url, long maxPixels) {
        try (InputStream in = url.openStream(); ImageInputStream iis = ImageIO.createImageInputStream(in)) {
            if (iis == null) {
                return;
            }
            Iterator<ImageReader> readers = ImageIO.getImageReaders(iis);
            if (!readers.hasNext()) {
                return; // not a raster image (SVG, font, CSS): not this probe's business
            }
            ImageReader reader = readers.next();
            try {
                reader.setInput(iis, true, true);
                long pixels = (long) reader.getWidth(0) * reader.getHeight(0);
                if (pixels > maxPixels) {
                    throw new ImageTooLarge();
                }
            } finally {
                reader.dispose();
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof ImageTooLarge t) {
                throw t;
            }
            // Unreadable header: Batik's own decoder reports it as a broken image.
        }
    }
}
