package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.batik.anim.dom.SVGOMDocument;
import org.apache.batik.bridge.BridgeContext;
import org.apache.batik.bridge.DocumentLoader;
import org.apache.batik.bridge.GVTBuilder;
import org.apache.batik.bridge.UserAgent;
import org.apache.batik.gvt.GraphicsNode;
import org.apache.batik.util.ParsedURL;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

/**
 * Batik's document loader for one render: loads exactly one kind of document, an SVG image given
 * as a {@code data:} URL ({@code <image xlink:href="data:image/svg+xml;base64,…">}, also
 * percent-encoded and svgz), and refuses every other (external {@code <use>}, {@code <feImage>},
 * paint servers and their {@code data:} forms too).
 *
 * <p>Batik's {@code SVGImageElementBridge} opens the URL (through {@link LockedDownUserAgent}, so
 * only {@code data:} gets this far; Batik inflates gzip itself), finds no raster image in it and
 * hands the stream to {@link #loadDocument(String, InputStream)}. The embedded document then goes
 * through the same lock-down as the request's own: the hardened {@link SvgParser} (same DTD and
 * entity rules), the same user agent (only {@code data:}, the shared pixel budget) and this loader
 * again for what it embeds, with these limits across the whole tree:
 * <ul>
 *   <li>at most {@link LimitChecker#MAX_SVG_IMAGE_NESTING} documents deep;</li>
 *   <li>element nesting, added up along the chain of documents, at most {@link LimitChecker#MAX_SVG_DEPTH}
 *       (Batik builds an embedded document recursively, on the same stack);</li>
 *   <li>decoded and inflated bytes read only up to what the {@link SvgBudget} has left, so an svgz
 *       bomb stops at the limit, and the same for the characters its text and attributes expand to
 *       (internal entities), so many small documents cannot each expand to the per-document entity
 *       limits;</li>
 *   <li>the elements of every drawn copy spent from the {@link SvgBudget}.</li>
 * </ul>
 * A document drawn several times is parsed once (Batik's own loader caches the same way).
 *
 * <p>Batik passes only {@link SecurityException}s out of an image's loading, and turns them into
 * a {@code BridgeException} that keeps neither the exception nor its type; every refusal here is a
 * {@link Refusal}, and the loader keeps the first one's typed error for {@link SvgRenderer}
 * ({@link #refusal()}).
 */
final class EmbeddedSvgLoader extends DocumentLoader {

    /** A typed refusal carried through Batik (which wraps it in a {@code BridgeException}). */
    static final class Refusal extends SecurityException {
        private static final long serialVersionUID = 1L;
        final transient RenderException error;

        Refusal(RenderException error) {
            super(error.getMessage());
            this.error = error;
        }
    }

    private final SvgBudget budget;
    /** Element depth of each embedded document. */
    private final Map<Document, Integer> depths = new IdentityHashMap<>();
    /** Embedded documents by URL, parsed once. */
    private final Map<String, SVGOMDocument> parsed = new HashMap<>();
    /** Element depths of the embedded documents being built, innermost first. */
    private final Deque<Integer> building = new ArrayDeque<>();
    private final GVTBuilder builder = new NestingBuilder();
    private int outerDepth;
    private RenderException refusal;

    EmbeddedSvgLoader(UserAgent ua, SvgBudget budget) {
        super(ua);
        this.budget = budget;
    }

    /** The builder that must build the request's document, so the loader knows how deep it is. */
    GVTBuilder builder() {
        return builder;
    }

    /** The element depth of the request's own document. */
    void outerDepth(int elementDepth) {
        outerDepth = elementDepth;
    }

    @Override
    public Document loadDocument(String uri) {
        throw new SecurityException("external documents are not loaded");
    }

    @Override
    public Document loadDocument(String uri, InputStream is) {
        ParsedURL url = new ParsedURL(uri);
        if (!"data".equals(url.getProtocol())) {
            throw new SecurityException("external documents are not loaded");
        }
        try {
            if (building.size() + 1 > LimitChecker.MAX_SVG_IMAGE_NESTING) {
                throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "SVG images embedded in SVG images nest deeper than "
                        + LimitChecker.MAX_SVG_IMAGE_NESTING + " levels");
            }
            int depthLeft = LimitChecker.MAX_SVG_DEPTH - outerDepth - building.stream().mapToInt(Integer::intValue).sum();
            SVGOMDocument doc = parsed.get(uri);
            if (doc == null) {
                doc = parse(url, is, depthLeft);
                parsed.put(uri, doc);
            } else if (depths.get(doc) > depthLeft) {
                throw tooDeep();
            }
            budget.chargeElements(SvgExpansion.count(doc));
            return doc;
        } catch (RenderException e) {
            if (refusal == null) {
                refusal = e;
            }
            throw new Refusal(e);
        }
    }

    /** The typed error of the first embedded document this loader refused, or null. */
    RenderException refusal() {
        return refusal;
    }

    private SVGOMDocument parse(ParsedURL url, InputStream is, int depthLeft) throws RenderException {
        byte[] bytes = readBounded(is, budget.embeddedBytesLeft());
        SvgParser.Parsed p;
        try {
            p = SvgParser.parse(bytes, Math.max(0, depthLeft), budget.embeddedBytesLeft());
        } catch (RenderException e) {
            if (e.code() == ErrorCode.PARSE_ERROR && !declaresSvg(url)) {
                throw new RenderException(ErrorCode.UNSUPPORTED,
                        "an embedded data: resource is neither SVG nor a supported raster image");
            }
            throw e.getMessage().startsWith("embedded") ? e
                    : new RenderException(e.code(), "embedded SVG image: " + e.getMessage());
        }
        budget.chargeEmbeddedBytes(Math.max(bytes.length, p.chars()));
        depths.put(p.document(), p.depth());
        return p.document();
    }

    private static boolean declaresSvg(ParsedURL url) {
        String type = url.getContentType();
        return type != null && type.toLowerCase(java.util.Locale.ROOT).startsWith("image/svg");
    }

    private static RenderException tooDeep() {
        return new RenderException(ErrorCode.LIMIT_EXCEEDED, "SVG nests elements deeper than "
                + LimitChecker.MAX_SVG_DEPTH + " levels (counting the SVG images it embeds)");
    }

    /** At most {@code max} bytes of {@code in}; LIMIT_EXCEEDED if it holds more. */
    private static byte[] readBounded(InputStream in, long max) throws RenderException {
        try {
            byte[] b = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 16, max + 1));
            if (b.length > max) {
                throw new RenderException(ErrorCode.LIMIT_EXCEEDED,
                        "embedded SVG images decode to more bytes than the request may carry");
            }
            return b;
        } catch (IOException e) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "embedded SVG image cannot be decoded");
        }
    }

    /** Keeps {@link #building} as the chain of embedded documents whose root is being built. */
    private final class NestingBuilder extends GVTBuilder {
        @Override
        public GraphicsNode build(BridgeContext ctx, Element e) {
            Document owner = e.getOwnerDocument();
            Integer depth = owner.getDocumentElement() == e ? depths.get(owner) : null;
            if (depth == null) {
                return super.build(ctx, e);
            }
            try {
                SvgReferences.check((SVGOMDocument) owner);
            } catch (RenderException refused) {
                if (refusal == null) {
                    refusal = refused;
                }
                throw new Refusal(refused);
            }
            building.push(depth);
            try {
                return super.build(ctx, e);
            } finally {
                building.pop();
            }
        }
    }
}
