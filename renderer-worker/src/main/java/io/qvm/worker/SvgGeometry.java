package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.w3c.dom.Element;

/**
 * The size an SVG declares for itself, read from the root's {@code width}, {@code height} and
 * {@code viewBox} before Batik builds anything, in CSS pixels (1/96 inch).
 *
 * <ul>
 *   <li>absolute {@code width} and {@code height} (px, pt, pc, mm, cm, in; em = 16 px, ex = 8 px): those;</li>
 *   <li>one of them absolute and a {@code viewBox}: the other follows the viewBox's aspect ratio;</li>
 *   <li>neither absolute (missing or a percentage) and a {@code viewBox}: the viewBox's size;</li>
 *   <li>otherwise the missing sides default to 300 × 150 (the CSS default object size).</li>
 * </ul>
 *
 * @param width document width, CSS px, finite and positive
 * @param height document height, CSS px, finite and positive
 */
record SvgGeometry(double width, double height) {

    static final double DEFAULT_WIDTH = 300;
    static final double DEFAULT_HEIGHT = 150;

    private static final Pattern LENGTH =
            Pattern.compile("\\s*([+-]?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?)\\s*(px|pt|pc|mm|cm|in|em|ex|%)?\\s*");
    private static final Pattern SEPARATOR = Pattern.compile("[\\s,]+");

    static SvgGeometry of(Element root) throws RenderException {
        Double w = length(root.getAttributeNS(null, "width"), "width");
        Double h = length(root.getAttributeNS(null, "height"), "height");
        double[] vb = viewBox(root.getAttributeNS(null, "viewBox"));
        double width;
        double height;
        if (w != null && h != null) {
            width = w;
            height = h;
        } else if (vb != null) {
            double ratio = vb[3] / vb[2];
            if (w != null) {
                width = w;
                height = w * ratio;
            } else if (h != null) {
                height = h;
                width = h / ratio;
            } else {
                width = vb[2];
                height = vb[3];
            }
        } else {
            width = w != null ? w : DEFAULT_WIDTH;
            height = h != null ? h : DEFAULT_HEIGHT;
        }
        if (!(width > 0) || !(height > 0) || !Double.isFinite(width) || !Double.isFinite(height)) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG size is not positive and finite");
        }
        return new SvgGeometry(width, height);
    }

    /** An absolute length in CSS px, null for missing or a percentage. */
    private static Double length(String s, String name) throws RenderException {
        if (s == null || s.isBlank()) {
            return null;
        }
        Matcher m = LENGTH.matcher(s);
        if (!m.matches()) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG " + name + " is not a length");
        }
        double v = Double.parseDouble(m.group(1));
        String unit = m.group(2) == null ? "px" : m.group(2);
        double px = switch (unit) {
            case "%" -> Double.NaN;
            case "pt" -> v * 96 / 72;
            case "pc" -> v * 16;
            case "mm" -> v * 96 / 25.4;
            case "cm" -> v * 96 / 2.54;
            case "in" -> v * 96;
            case "em" -> v * 16;
            case "ex" -> v * 8;
            default -> v;
        };
        if (Double.isNaN(px)) {
            return null;
        }
        if (!(px > 0) || !Double.isFinite(px)) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG " + name + " is not positive and finite");
        }
        return px;
    }

    private static double[] viewBox(String s) throws RenderException {
        if (s == null || s.isBlank()) {
            return null;
        }
        String[] parts = SEPARATOR.split(s.trim());
        if (parts.length != 4) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG viewBox does not have four numbers");
        }
        double[] v = new double[4];
        try {
            for (int i = 0; i < 4; i++) {
                v[i] = Double.parseDouble(parts[i]);
                if (!Double.isFinite(v[i])) {
                    throw new NumberFormatException();
                }
            }
        } catch (NumberFormatException e) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG viewBox is not four finite numbers");
        }
        if (!(v[2] > 0) || !(v[3] > 0)) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG viewBox width and height must be positive");
        }
        return v;
    }
}
