package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import java.awt.AlphaComposite;
import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.geom.Dimension2D;
import java.awt.image.BufferedImage;
import java.util.ArrayList;
import java.util.List;
import org.apache.batik.anim.dom.SVGOMDocument;
import org.apache.batik.bridge.BridgeContext;
import org.apache.batik.bridge.BridgeException;
import org.apache.batik.bridge.ErrorConstants;
import org.apache.batik.bridge.InterruptedBridgeException;
import org.apache.batik.ext.awt.image.GraphicsUtil;
import org.apache.batik.gvt.GraphicsNode;
import org.apache.batik.script.ImportInfo;
import org.apache.batik.script.Interpreter;
import org.apache.batik.script.InterpreterPool;
import org.apache.batik.util.HaltingThread;
import org.apache.batik.util.SVGConstants;
import org.w3c.dom.Document;
import org.w3c.dom.NodeList;

/**
 * SVG → PNG with Apache Batik, locked down (see {@link SvgParser}, {@link LockedDownUserAgent},
 * {@link UrlLockdown}): parse with the hardened JDK parser, check nesting and {@code <use>}
 * expansion, compute the output size from the declared size and check it against the limits,
 * refuse a document whose references form a cycle or too long a chain ({@link SvgReferences}, with
 * the styles Batik's CSS engine computes), then build the GVT tree in a <em>static</em> bridge context (no scripting, no animation, no
 * interpreters, no external documents; SVG images embedded as {@code data:} URLs go through the
 * same lock-down, see {@link EmbeddedSvgLoader}, all within one {@link SvgBudget}) and paint it
 * onto a raster of exactly that size.
 *
 * <p>Runs on the watchdog's {@link HaltingThread}: when the watchdog halts it, Batik's builder
 * and painter stop at their next check and the render ends in TIMEOUT, never in a partial image.
 */
final class SvgRenderer {

    /** CSS pixels per inch: the unit an SVG's size is measured in. */
    static final double UNITS_PER_INCH = 96;

    Rendered render(RenderRequest request, LimitChecker limits, Cancellation cancel) throws RenderException {
        UrlLockdown.install();
        SvgParser.Parsed parsed = SvgParser.parse(request.document(), LimitChecker.MAX_SVG_DEPTH, Long.MAX_VALUE);
        SVGOMDocument doc = parsed.document();
        SvgBudget budget = new SvgBudget(limits);
        budget.chargeElements(SvgExpansion.count(doc));
        SvgGeometry geometry = SvgGeometry.of(doc.getDocumentElement());
        OutputSize out = OutputSize.of(geometry.width(), geometry.height(), UNITS_PER_INCH, request, limits);
        cancel.check();

        LockedDownUserAgent ua = new LockedDownUserAgent(new Size(geometry.width(), geometry.height()), budget);
        EmbeddedSvgLoader loader = new EmbeddedSvgLoader(ua, budget);
        loader.outerDepth(parsed.depth());
        RenderContext ctx = new RenderContext(ua, loader);
        ctx.setDynamicState(BridgeContext.STATIC);
        try {
            ctx.prepare(doc);
            SvgReferences.check(doc);
            cancel.check();
            GraphicsNode root = loader.builder().build(ctx, doc);
            cancel.check();
            SvgCost.check(root, patterns(doc, ctx), deviceTransform(out), out.width(), out.height(), limits);
            limits.checkRasterFitsHeap(out.width(), out.height());
            BufferedImage image = new BufferedImage(out.width(), out.height(), BufferedImage.TYPE_INT_ARGB);
            paint(root, image, out, request.backgroundArgb());
            if (cancel.isCancelled() || HaltingThread.hasBeenHalted()) {
                throw cancel.timeout();
            }
            return new Rendered(PngEncoder.encode(image, limits), out.width(), out.height());
        } catch (InterruptedBridgeException | Cancellation.CancelledException e) {
            throw cancel.timeout();
        } catch (BridgeException e) {
            throw classify(e, cancel, ua, loader);
        } catch (EmbeddedImageProbe.ImageTooLarge e) {
            throw imageTooLarge();
        } catch (EmbeddedSvgLoader.Refusal e) {
            throw e.error;
        } catch (SecurityException e) {
            throw refused();
        } catch (RuntimeException e) {
            MemoryGuard.rethrowIfOutOfMemory(e);
            if (cancel.isCancelled()) {
                throw cancel.timeout();
            }
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG could not be rendered ("
                    + e.getClass().getSimpleName() + ")");
        } finally {
            ctx.dispose();
        }
    }

    private static void paint(GraphicsNode root, BufferedImage image, OutputSize out, int backgroundArgb) {
        Graphics2D g = GraphicsUtil.createGraphics(image);
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_RENDERING, RenderingHints.VALUE_RENDER_QUALITY);
            g.setRenderingHint(RenderingHints.KEY_INTERPOLATION, RenderingHints.VALUE_INTERPOLATION_BILINEAR);
            if (backgroundArgb != 0) {
                g.setComposite(AlphaComposite.Src);
                g.setColor(new Color(backgroundArgb, true));
                g.fillRect(0, 0, image.getWidth(), image.getHeight());
            }
            g.setComposite(AlphaComposite.SrcOver);
            g.transform(deviceTransform(out));
            root.paint(g);
        } finally {
            g.dispose();
        }
    }

    /** The content the bridge built for each {@code <pattern>} element (painted from a paint, not a node). */
    private static List<GraphicsNode> patterns(Document doc, BridgeContext ctx) {
        List<GraphicsNode> out = new ArrayList<>();
        NodeList elements = doc.getElementsByTagNameNS(SVGConstants.SVG_NAMESPACE_URI, SVGConstants.SVG_PATTERN_TAG);
        for (int i = 0; i < elements.getLength(); i++) {
            if (ctx.getElementData(elements.item(i)) instanceof GraphicsNode content) {
                out.add(content);
            }
        }
        return out;
    }

    /** The root's user space → output pixels: the document fitted and centred. */
    private static AffineTransform deviceTransform(OutputSize out) {
        AffineTransform at = AffineTransform.getTranslateInstance(out.offsetX(), out.offsetY());
        at.scale(out.scale(), out.scale());
        return at;
    }

    private static RenderException classify(BridgeException e, Cancellation cancel, LockedDownUserAgent ua,
            EmbeddedSvgLoader loader) {
        if (cancel.isCancelled()) {
            return cancel.timeout();
        }
        if (ua.refusedOversizeImage()) {
            return imageTooLarge();
        }
        if (loader.refusal() != null) {
            return loader.refusal(); // an embedded SVG image, at any depth, was refused
        }
        if (ErrorConstants.ERR_URI_UNSECURE.equals(e.getCode())) {
            return refused();
        }
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            if (c instanceof SecurityException) {
                return refused();
            }
        }
        // The code is one of Batik's constants (e.g. "attribute.missing"), never document text.
        return new RenderException(ErrorCode.PARSE_ERROR, "invalid SVG (" + e.getCode() + ")");
    }

    private static RenderException imageTooLarge() {
        return new RenderException(ErrorCode.LIMIT_EXCEEDED, "embedded images are above the pixel limit");
    }

    private static RenderException refused() {
        return new RenderException(ErrorCode.UNSUPPORTED,
                "SVG refers to an external resource or script; only data: URIs are allowed");
    }

    /** A viewport size in CSS px. */
    private static final class Size extends Dimension2D {
        private double w;
        private double h;

        Size(double w, double h) {
            this.w = w;
            this.h = h;
        }

        @Override
        public double getWidth() {
            return w;
        }

        @Override
        public double getHeight() {
            return h;
        }

        @Override
        public void setSize(double width, double height) {
            this.w = width;
            this.h = height;
        }
    }

    /**
     * The bridge context of one render. {@link #prepare} does what the builder does first (binds the
     * document, sets up its CSS engine with this context's user agent), so that the checks before
     * the build see the styles the build will use.
     */
    private static final class RenderContext extends BridgeContext {
        RenderContext(LockedDownUserAgent ua, EmbeddedSvgLoader loader) {
            super(ua, new NoInterpreters(), loader);
        }

        void prepare(Document doc) {
            setDocument(doc);
            initializeDocument(doc);
        }
    }

    /** An interpreter pool that has no interpreter for any language. */
    private static final class NoInterpreters extends InterpreterPool {
        @Override
        public Interpreter createInterpreter(Document document, String language) {
            return null;
        }

        @Override
        public Interpreter createInterpreter(Document document, String language, ImportInfo imports) {
            return null;
        }
    }
}
