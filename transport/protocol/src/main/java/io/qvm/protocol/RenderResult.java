package io.qvm.protocol;

import java.util.Arrays;
import java.util.Objects;

/**
 * A rendered image: the {@link FrameKind#RENDER_RESULT} answer to a {@link RenderRequest}.
 *
 * <pre>
 *  header field  type     meaning
 *  ------------  -------  ----------------------------------------------------------------
 *  format        string   "png"
 *  width         int      image width in pixels, ≥ 1
 *  height        int      image height in pixels, ≥ 1
 *  renderMillis  long     time the worker spent on the request (parse + render + encode), ≥ 0
 *  outputBytes   int      length of the body, checked against it
 *  body          bytes    the PNG (starts with the PNG signature)
 * </pre>
 *
 * The PNG array is not copied. This record checks only the signature; the host checks the PNG's
 * header and chunk list against the header fields, the request and the limits before it hands a
 * result on ({@link Messages#renderResult(Frame, RenderRequest, Limits)}).
 *
 * @param png the encoded image
 * @param width image width in pixels
 * @param height image height in pixels
 * @param renderMillis worker time for the request
 */
public record RenderResult(byte[] png, int width, int height, long renderMillis) {

    public RenderResult {
        Objects.requireNonNull(png, "png");
        if (width < 1 || height < 1) {
            throw new IllegalArgumentException("width and height must be at least 1");
        }
        if (renderMillis < 0) {
            throw new IllegalArgumentException("renderMillis must not be negative");
        }
        if (!PngHeader.startsWithSignature(png)) {
            throw new IllegalArgumentException("the body is not a PNG");
        }
    }

    /** Size of the PNG in bytes. */
    public int outputBytes() {
        return png.length;
    }




    @Override
    public String toString() {
        return "RenderResult[" + width + "x" + height + " " + png.length + " bytes in " + renderMillis + " ms]";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RenderResult r && Arrays.equals(png, r.png) && width == r.width && height == r.height
                && renderMillis == r.renderMillis;
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(png), width, height, renderMillis);
    }
}
