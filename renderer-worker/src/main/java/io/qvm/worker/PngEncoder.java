package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.util.Iterator;
import javax.imageio.ImageIO;
import javax.imageio.ImageWriter;
import javax.imageio.stream.ImageOutputStream;
import javax.imageio.stream.MemoryCacheImageOutputStream;

/** Encodes an image as PNG into a size-capped buffer, in memory only (no ImageIO temp files). */
public final class PngEncoder {

    static {
        ImageIO.setUseCache(false);
    }

    private PngEncoder() {
    }

    /**
     * @throws RenderException TOO_LARGE as soon as the PNG passes the response limit
     */
    public static byte[] encode(BufferedImage image, LimitChecker limits) throws RenderException {
        LimitChecker.BoundedOutput out = limits.boundedOutput();
        Iterator<ImageWriter> writers = ImageIO.getImageWritersByFormatName("png");
        if (!writers.hasNext()) {
            throw new RenderException(ErrorCode.INTERNAL, "no PNG writer in this JRE");
        }
        ImageWriter writer = writers.next();
        try (ImageOutputStream ios = new MemoryCacheImageOutputStream(out)) {
            writer.setOutput(ios);
            writer.write(image);
        } catch (LimitChecker.OutputTooLarge e) {
            throw e.toRenderException();
        } catch (IOException e) {
            if (e.getCause() instanceof LimitChecker.OutputTooLarge t) {
                throw t.toRenderException();
            }
            throw new RenderException(ErrorCode.INTERNAL, "PNG encoding failed");
        } finally {
            writer.dispose();
        }
        return out.toByteArray();
    }
}
