package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.awt.BasicStroke;
import java.awt.Shape;
import java.awt.Stroke;
import java.awt.geom.AffineTransform;
import java.awt.geom.PathIterator;
import java.awt.geom.Rectangle2D;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.apache.batik.ext.awt.image.renderable.DisplacementMapRable;
import org.apache.batik.ext.awt.image.renderable.Filter;
import org.apache.batik.ext.awt.image.renderable.MorphologyRable;
import org.apache.batik.gvt.CompositeGraphicsNode;
import org.apache.batik.gvt.CompositeShapePainter;
import org.apache.batik.gvt.GraphicsNode;
import org.apache.batik.gvt.Marker;
import org.apache.batik.gvt.MarkerShapePainter;
import org.apache.batik.gvt.ShapeNode;
import org.apache.batik.gvt.ShapePainter;
import org.apache.batik.gvt.StrokeShapePainter;

/**
 * The memory a built GVT tree will ask for while it is painted, where that is in proportion to a
 * number the document declares rather than to its size or the output's: checked after
 * {@code GVTBuilder.build} and before the raster exists, with the output's device transform.
 *
 * <ul>
 * <li><b>Dashes.</b> Java 2D's {@code BasicStroke.createStrokedShape} builds one sub-path per dash,
 *     so a dashed stroke costs its path length over the dash period (a 100 px line dashed every
 *     10⁻⁶ px is 10⁸ dashes). Summed over every stroked shape in the tree (the stroke Batik built
 *     already carries the inherited and CSS values), at most {@link #MAX_DASHES}.</li>
 * <li><b>feMorphology.</b> Batik reads the source as one raster padded by the radius in device
 *     pixels on every side: (w + 2r) × (h + 2r), w × h the filter's region clipped to the output.</li>
 * <li><b>feDisplacementMap.</b> Batik's tile offsets are arrays as long as a tile plus the largest
 *     displacement, {@code scale} in device pixels: at most 2 × (the output's larger side +
 *     maxSide), as a displacement beyond the output moves nothing onto it.</li>
 * </ul>
 * The walk goes into what a node paints without holding it as a child: marker, mask and
 * pattern content. The raster check uses {@link LimitChecker#maxIntermediatePixels()}. What is
 * not here is held elsewhere, as the corpus tests show: Batik caps a blur's deviation at 10
 * device pixels and scales the rest, lighting's kernelUnitLength only lowers the resolution,
 * filter, mask, clip and pattern regions are clipped to the output, and an allocation nobody
 * estimated ends in {@link MemoryGuard}.
 */
final class SvgCost {

    /** Most dashes the strokes of one document may have in all. */
    static final long MAX_DASHES = 1_000_000;

    private final AffineTransform device;
    private final double outWidth;
    private final double outHeight;
    private final LimitChecker limits;
    private double dashes;
    private final Set<GraphicsNode> detached = Collections.newSetFromMap(new IdentityHashMap<>());

    private SvgCost(AffineTransform device, double outWidth, double outHeight, LimitChecker limits) {
        this.device = device;
        this.outWidth = outWidth;
        this.outHeight = outHeight;
        this.limits = limits;
    }

    /**
     * LIMIT_EXCEEDED if painting {@code root} with {@code device} (user space of the root → output
     * pixels) onto a {@code outWidth} × {@code outHeight} raster would be above a limit above.
     *
     * @param patterns the content of every {@code <pattern>} the bridge built (Batik's paint holds
     *     it behind a private node): checked with {@code device}, without the tile's own transform
     */
    static void check(GraphicsNode root, Collection<GraphicsNode> patterns, AffineTransform device, int outWidth,
            int outHeight, LimitChecker limits) throws RenderException {
        SvgCost cost = new SvgCost(device, outWidth, outHeight, limits);
        cost.visit(root, device);
        for (GraphicsNode pattern : patterns) {
            cost.visitDetached(pattern, device);
        }
    }

    /** {@code base}: the device transform of the space {@code node}'s root (global transform) lives in. */
    private void visit(GraphicsNode node, AffineTransform base) throws RenderException {
        if (node == null) {
            return;
        }
        AffineTransform at = new AffineTransform(base);
        at.concatenate(node.getGlobalTransform());
        if (node.getFilter() != null) {
            checkFilter(node.getFilter(), at);
        }
        if (node.getMask() != null) {
            checkFilter(node.getMask(), at);
            visitDetached(node.getMask().getMaskNode(), at);
        }
        if (node instanceof ShapeNode shape) {
            checkPainter(shape.getShapePainter(), at);
        }
        if (node instanceof org.apache.batik.bridge.TextNode text) {
            checkText(text);
        }
        if (node instanceof CompositeGraphicsNode group) {
            for (Object child : group.getChildren()) {
                visit((GraphicsNode) child, base);
            }
        }
    }

    /**
     * A tree that is painted from a node but is not its child (marker, mask, pattern content), once
     * per tree: Batik builds one per reference, so the element budget bounds their number.
     */
    private void visitDetached(GraphicsNode root, AffineTransform at) throws RenderException {
        if (root != null && detached.add(root)) {
            visit(root, at);
        }
    }

    private void checkPainter(ShapePainter painter, AffineTransform at) throws RenderException {
        if (painter instanceof CompositeShapePainter composite) {
            for (int i = 0; i < composite.getShapePainterCount(); i++) {
                checkPainter(composite.getShapePainter(i), at);
            }
        } else if (painter instanceof StrokeShapePainter stroke) {
            addDashes(dashes(stroke.getStroke(), stroke.getShape()));
        } else if (painter instanceof MarkerShapePainter markers) {
            Marker[] all = {markers.getStartMarker(), markers.getMiddleMarker(), markers.getEndMarker()};
            for (Marker m : all) {
                if (m != null) {
                    visitDetached(m.getMarkerNode(), at);
                }
            }
        }
    }

    /**
     * Dashed text: each character run's stroke (its {@code TextPaintInfo}) dashes the glyph
     * outlines, so the densest dashed stroke of the node counts over the whole text's outline.
     */
    private void checkText(org.apache.batik.bridge.TextNode text) throws RenderException {
        java.text.AttributedCharacterIterator aci = text.getAttributedCharacterIterator();
        if (aci == null) {
            return;
        }
        BasicStroke densest = null;
        double density = 0;
        for (char ch = aci.first(); ch != java.text.CharacterIterator.DONE; ch = aci.setIndex(aci.getRunLimit())) {
            Object info = aci.getAttribute(org.apache.batik.bridge.TextNode.PAINT_INFO);
            if (info instanceof org.apache.batik.gvt.text.TextPaintInfo tpi && tpi.strokeStroke instanceof BasicStroke b
                    && b.getDashArray() != null) {
                double d = dashesPerUnit(b);
                if (d > density) {
                    density = d;
                    densest = b;
                }
            }
            if (aci.getRunLimit() >= aci.getEndIndex()) {
                break;
            }
        }
        if (densest != null) {
            addDashes(dashes(densest, text.getOutline()));
        }
    }

    private void addDashes(double more) throws RenderException {
        dashes += more;
        if (dashes > MAX_DASHES) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "the document's dashed strokes have more than "
                    + MAX_DASHES + " dashes");
        }
    }

    /** Dashes a stroke makes along {@code shape}: its length over the dash period, times the entries. */
    static double dashes(Stroke stroke, Shape shape) {
        if (!(stroke instanceof BasicStroke basic) || basic.getDashArray() == null || shape == null) {
            return 0;
        }
        double length = length(shape);
        if (length == 0) {
            return 0;
        }
        double perUnit = dashesPerUnit(basic);
        return Double.isFinite(length) ? length * perUnit : Double.POSITIVE_INFINITY;
    }

    /** Dashes a dashed stroke makes per unit of length: its entries over its period (infinite for a 0 period). */
    private static double dashesPerUnit(BasicStroke dashed) {
        float[] dash = dashed.getDashArray();
        double period = 0;
        for (float d : dash) {
            period += Math.abs(d);
        }
        return period > 0 ? dash.length / period : Double.POSITIVE_INFINITY;
    }

    /** The length of {@code shape}'s outline, curves flattened to a thousandth of its size. */
    private static double length(Shape shape) {
        Rectangle2D b = shape.getBounds2D();
        double flatness = Math.max(Math.max(b.getWidth(), b.getHeight()) / 1000, 1e-3);
        double[] c = new double[6];
        double total = 0;
        double x = 0;
        double y = 0;
        double mx = 0;
        double my = 0;
        for (PathIterator it = shape.getPathIterator(null, flatness); !it.isDone(); it.next()) {
            switch (it.currentSegment(c)) {
                case PathIterator.SEG_MOVETO -> {
                    x = mx = c[0];
                    y = my = c[1];
                }
                case PathIterator.SEG_LINETO -> {
                    total += Math.hypot(c[0] - x, c[1] - y);
                    x = c[0];
                    y = c[1];
                }
                case PathIterator.SEG_CLOSE -> {
                    total += Math.hypot(mx - x, my - y);
                    x = mx;
                    y = my;
                }
                default -> {
                    // flattened: no curves
                }
            }
        }
        return total;
    }

    private void checkFilter(Filter filter, AffineTransform at) throws RenderException {
        double sx = Math.hypot(at.getScaleX(), at.getShearY());
        double sy = Math.hypot(at.getScaleY(), at.getShearX());
        if (filter instanceof MorphologyRable m) {
            Rectangle2D region = at.createTransformedShape(m.getBounds2D()).getBounds2D();
            double w = Math.min(region.getWidth(), outWidth) + 2 * Math.abs(m.getRadiusX() * sx);
            double h = Math.min(region.getHeight(), outHeight) + 2 * Math.abs(m.getRadiusY() * sy);
            checkRaster("an feMorphology radius", w, h);
        }
        if (filter instanceof DisplacementMapRable d) {
            double shift = Math.abs(d.getScale()) * Math.max(sx, sy);
            if (!(shift <= 2 * (Math.max(outWidth, outHeight) + limits.limits().maxSide()))) {
                throw new RenderException(ErrorCode.LIMIT_EXCEEDED,
                        "an feDisplacementMap scale is far beyond the output's size");
            }
        }
        List<?> sources = filter.getSources();
        if (sources != null) {
            for (Object source : sources) {
                if (source instanceof Filter f) {
                    checkFilter(f, at);
                }
            }
        }
    }

    private void checkRaster(String what, double w, double h) throws RenderException {
        double pixels = w * h;
        if (!(pixels <= limits.maxIntermediatePixels())) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, what + " needs an intermediate image above "
                    + limits.maxIntermediatePixels() + " pixels");
        }
    }
}
