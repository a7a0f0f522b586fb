package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.batik.anim.dom.SVGOMDocument;
import org.apache.batik.css.engine.CSSEngine;
import org.apache.batik.css.engine.CSSStylableElement;
import org.apache.batik.css.engine.value.Value;
import org.apache.batik.dom.AbstractNode;
import org.apache.batik.util.ParsedURL;
import org.apache.batik.util.SVGConstants;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.css.CSSPrimitiveValue;
import org.w3c.dom.css.CSSValue;

/**
 * The references an SVG document makes to its own elements, as a graph, checked before Batik
 * builds anything: a document that refers to itself (a {@code clipPath} whose content is clipped
 * by the same {@code clipPath}, a {@code <g id="a">} holding a {@code <use href="#a">}, a filter
 * whose {@code feImage} draws the element the filter is on…) makes Batik recurse until the stack
 * overflows, and a long chain of references makes it recurse deeply. Refused here in one linear,
 * iterative pass:
 * <ul>
 *   <li>a cycle: PARSE_ERROR — such a document is in error (SVG 1.1 §5.3.1: "a reference cycle is
 *       an error"), no renderer can draw it, and Batik already answers the cycles it notices itself
 *       ({@code xlink.href.circularDependencies}) with PARSE_ERROR; the message names the ids on
 *       the cycle;</li>
 *   <li>a chain of more than {@link #MAX_CHAIN} references: LIMIT_EXCEEDED — the document is legal
 *       but costs more stack than the worker gives it; the message gives the document's depth.</li>
 * </ul>
 *
 * <p>The graph: one node per element with an {@code id}. Element X's references are
 * <ul>
 *   <li>{@code href} and {@code xlink:href} on any element but links and animations
 *       ({@code use}, {@code image}, {@code feImage}, {@code pattern}, gradients, {@code filter},
 *       {@code tref}, {@code textPath}…);</li>
 *   <li>the values Batik's own CSS engine computes for X — presentation attributes, {@code style}
 *       attributes and {@code <style>} sheets alike, after the cascade and inheritance, with
 *       Batik's parsing of {@code url()}: {@code clip-path}, {@code mask} and {@code filter} on
 *       every element, {@code fill} and {@code stroke} on shapes and text, {@code marker-*} on the
 *       shapes that draw markers;</li>
 * </ul>
 * each resolved the way Batik's {@code URIResolver} does (against the element's base, local when
 * it names this document, {@code getElementById} of the fragment). A reference of X is an edge
 * from the nearest element with an id among X and its ancestors; and an element with an id is
 * drawn with its nearest ancestor with an id (a containment edge, which adds nothing to the
 * chain's length), so {@code <g id="a"><use href="#a"/></g>} is a cycle. Content that is never
 * drawn where it stands ({@code defs}, {@code clipPath}, {@code mask}, {@code pattern},
 * {@code marker}, {@code filter}, gradients, {@code symbol}, SVG fonts) is not drawn with its
 * ancestors: its references count for it alone. SVG fonts are drawn by family name, which is not
 * resolved here: every text element refers to every {@code <font>} of the document, whose glyphs
 * may draw anything (a glyph that draws the text that uses it is a cycle too).
 *
 * <p>Cost: one pass over the elements (which {@link SvgExpansion} has already bounded by
 * {@link LimitChecker#MAX_SVG_EXPANDED_ELEMENTS}), a few edges per element, one iterative
 * depth-first search; no recursion anywhere, whatever the document's depth. The computed styles
 * are the ones Batik's build then uses (the engine caches them).
 */
final class SvgReferences {

    /** Longest chain of references (use, clip-path, href…) a document may make. */
    static final int MAX_CHAIN = 32;

    /** Longest id quoted in a message; longer ones are cut. */
    private static final int MAX_QUOTED_ID = 32;
    /** Most ids of a cycle quoted in a message. */
    private static final int MAX_QUOTED_IDS = 6;

    private static final String XLINK = "http://www.w3.org/1999/xlink";

    /** Content of these is drawn only where it is referenced, never with its ancestors. */
    private static final Set<String> DRAWN_BY_REFERENCE = Set.of("defs", "clipPath", "mask", "pattern", "marker",
            "filter", "linearGradient", "radialGradient", "symbol", "font", "altGlyphDef");

    /** Elements whose href Batik does not follow while it draws (links, animations, scripts, cursors). */
    private static final Set<String> HREF_NOT_DRAWN = Set.of("a", "animate", "animateColor", "animateMotion",
            "animateTransform", "set", "mpath", "script", "cursor", "font-face-uri", "color-profile");

    /** Properties that reference an element on every element. */
    private static final List<String> ANY_ELEMENT = List.of("clip-path", "mask", "filter");
    /** Elements that paint with fill and stroke. */
    private static final Set<String> PAINTED = Set.of("rect", "circle", "ellipse", "line", "polyline", "polygon",
            "path", "text", "tspan", "tref", "textPath", "altGlyph");
    /** Elements that draw text, possibly with an SVG font's glyphs. */
    private static final Set<String> TEXT = Set.of("text", "tspan", "tref", "textPath", "altGlyph");
    /** Elements that draw markers. */
    private static final Set<String> MARKED = Set.of("path", "line", "polyline", "polygon");

    private final SVGOMDocument doc;
    private final CSSEngine css;
    private final ParsedURL documentUrl;
    private final int[] anyElement;
    private final int[] paint;
    private final int[] markers;

    /** The nodes: elements with an id, in document order, and their numbers. */
    private final List<Element> nodes = new ArrayList<>();
    private final Map<Element, Integer> numbers = new IdentityHashMap<>();
    /** Edges as parallel lists: from, to, and whether it is a reference (1) or containment (0). */
    private int[] from = new int[64];
    private int[] to = new int[64];
    private byte[] weight = new byte[64];
    private int edges;
    /**
     * The node that stands for all of the document's SVG fonts, or -1 while it has none: text may
     * be drawn with any of them (font families are not resolved here), so every text element
     * references this node and it contains every {@code <font>} (whose glyphs may draw anything).
     */
    private int fonts = -1;
    /** The owners of text elements, for the edges to {@link #fonts} once the pass is over. */
    private final List<Integer> textOwners = new ArrayList<>();

    private SvgReferences(SVGOMDocument doc) {
        this.doc = doc;
        this.css = doc.getCSSEngine();
        this.documentUrl = new ParsedURL(doc.getURL());
        this.anyElement = indexes(ANY_ELEMENT);
        this.paint = indexes(List.of("fill", "stroke"));
        this.markers = indexes(List.of("marker-start", "marker-mid", "marker-end"));
    }

    /**
     * Refuses {@code doc} if its references form a cycle or a chain longer than {@link #MAX_CHAIN}.
     * The document's CSS engine must be set up (the bridge context initialised for it), so that the
     * computed styles are Batik's.
     */
    static void check(SVGOMDocument doc) throws RenderException {
        if (doc.getCSSEngine() == null) {
            throw new IllegalStateException("the document's CSS engine is not set up");
        }
        new SvgReferences(doc).run();
    }

    private int[] indexes(List<String> properties) {
        return properties.stream().mapToInt(css::getPropertyIndex).filter(i -> i >= 0).toArray();
    }

    private void run() throws RenderException {
        collect();
        if (fonts >= 0) {
            for (int owner : textOwners) {
                edge(owner, fonts, 1);
            }
        }
        search();
    }

    /** One pre-order pass over the elements (an explicit stack): nodes and edges. */
    private void collect() {
        Element root = doc.getDocumentElement();
        // Each entry: an element and the node its content is drawn with (-1: none).
        Deque<Object[]> stack = new ArrayDeque<>();
        stack.push(new Object[] {root, -1});
        while (!stack.isEmpty()) {
            Object[] top = stack.pop();
            Element e = (Element) top[0];
            int drawnWith = (Integer) top[1];
            boolean byReference = SVGConstants.SVG_NAMESPACE_URI.equals(e.getNamespaceURI())
                    && DRAWN_BY_REFERENCE.contains(e.getLocalName());
            int self = node(e);
            if (self >= 0 && drawnWith >= 0 && !byReference) {
                edge(drawnWith, self, 0);
            }
            int owner = self >= 0 ? self : byReference ? -1 : drawnWith;
            if (owner >= 0) {
                references(e, owner);
            }
            if (svg(e, "font")) {
                edge(fontsNode(), self >= 0 ? self : fontNode(e), 0);
                owner = numbers.get(e);
            }
            if (owner >= 0 && TEXT.contains(e.getLocalName()) && svg(e, e.getLocalName())) {
                textOwners.add(owner);
            }
            int forChildren = owner;
            List<Element> children = new ArrayList<>();
            for (Node c = e.getFirstChild(); c != null; c = c.getNextSibling()) {
                if (c instanceof Element child) {
                    children.add(child);
                }
            }
            for (int i = children.size() - 1; i >= 0; i--) {
                stack.push(new Object[] {children.get(i), forChildren});
            }
        }
    }

    private static boolean svg(Element e, String name) {
        return SVGConstants.SVG_NAMESPACE_URI.equals(e.getNamespaceURI()) && name.equals(e.getLocalName());
    }

    /** The node for all SVG fonts (created on first use). */
    private int fontsNode() {
        if (fonts < 0) {
            fonts = nodes.size();
            nodes.add(null);
        }
        return fonts;
    }

    /** A node for a {@code <font>} without an id. */
    private int fontNode(Element font) {
        int n = nodes.size();
        nodes.add(font);
        numbers.put(font, n);
        return n;
    }

    /** The node number of {@code e}, or -1 if it has no id. */
    private int node(Element e) {
        Integer known = numbers.get(e);
        if (known != null) {
            return known;
        }
        if (e.getAttributeNS(null, "id").isEmpty()) {
            return -1;
        }
        int n = nodes.size();
        nodes.add(e);
        numbers.put(e, n);
        return n;
    }

    /** Adds an edge from {@code owner} to every element {@code e} references. */
    private void references(Element e, int owner) {
        boolean svg = SVGConstants.SVG_NAMESPACE_URI.equals(e.getNamespaceURI());
        String name = e.getLocalName();
        if (!(svg && HREF_NOT_DRAWN.contains(name))) {
            reference(e, e.getAttributeNS(XLINK, "href"), owner);
            reference(e, e.getAttributeNS(null, "href"), owner);
        }
        if (e instanceof CSSStylableElement styled && svg) {
            properties(styled, anyElement, owner);
            if (PAINTED.contains(name)) {
                properties(styled, paint, owner);
            }
            if (MARKED.contains(name)) {
                properties(styled, markers, owner);
            }
        }
    }

    private void properties(CSSStylableElement e, int[] indexes, int owner) {
        for (int index : indexes) {
            Value v = css.getComputedStyle(e, null, index);
            if (v == null) {
                continue;
            }
            if (v.getCssValueType() == CSSValue.CSS_VALUE_LIST) {
                for (int i = 0; i < v.getLength(); i++) {
                    uri(e, v.item(i), owner);
                }
            } else {
                uri(e, v, owner);
            }
        }
    }

    private void uri(Element e, Value v, int owner) {
        if (v.getCssValueType() == CSSValue.CSS_PRIMITIVE_VALUE && v.getPrimitiveType() == CSSPrimitiveValue.CSS_URI) {
            reference(e, v.getStringValue(), owner);
        }
    }

    /** Resolves {@code uri} as Batik's URIResolver does; an edge if it names an element of this document. */
    private void reference(Element e, String uri, int owner) {
        if (uri == null || uri.isEmpty()) {
            return;
        }
        ParsedURL url = new ParsedURL(((AbstractNode) e).getBaseURI(), uri);
        String fragment = url.getRef();
        Element target = fragment != null && documentUrl.sameFile(url) ? doc.getElementById(fragment) : null;
        if (target != null) {
            int t = node(target);
            if (t >= 0) {
                edge(owner, t, 1);
            }
        }
    }

    private void edge(int a, int b, int w) {
        if (edges == from.length) {
            from = Arrays.copyOf(from, edges * 2);
            to = Arrays.copyOf(to, edges * 2);
            weight = Arrays.copyOf(weight, edges * 2);
        }
        from[edges] = a;
        to[edges] = b;
        weight[edges] = (byte) w;
        edges++;
    }

    /**
     * Iterative depth-first search: a back edge is a cycle; post-order gives each node the longest
     * chain of references that starts at it.
     */
    private void search() throws RenderException {
        int n = nodes.size();
        // Adjacency in compressed rows: the edges of node i are first[i] .. first[i + 1] - 1 of order.
        int[] first = new int[n + 1];
        for (int i = 0; i < edges; i++) {
            first[from[i] + 1]++;
        }
        for (int i = 0; i < n; i++) {
            first[i + 1] += first[i];
        }
        int[] order = new int[edges];
        int[] fill = Arrays.copyOf(first, n);
        for (int i = 0; i < edges; i++) {
            order[fill[from[i]]++] = i;
        }
        byte[] state = new byte[n]; // 0 new, 1 on the path, 2 done
        int[] longest = new int[n];
        int[] next = new int[n]; // the next edge to follow from each node on the path
        int[] path = new int[n];
        int deepest = 0;
        for (int start = 0; start < n; start++) {
            if (state[start] != 0) {
                continue;
            }
            int depth = 0;
            path[depth++] = start;
            state[start] = 1;
            next[start] = first[start];
            while (depth > 0) {
                int v = path[depth - 1];
                if (next[v] < first[v + 1]) {
                    int edge = order[next[v]++];
                    int w = to[edge];
                    if (state[w] == 1) {
                        throw cycle(path, depth, w);
                    }
                    if (state[w] == 0) {
                        state[w] = 1;
                        next[w] = first[w];
                        path[depth++] = w;
                    }
                } else {
                    int best = 0;
                    for (int i = first[v]; i < first[v + 1]; i++) {
                        int edge = order[i];
                        best = Math.max(best, weight[edge] + longest[to[edge]]);
                    }
                    longest[v] = best;
                    deepest = Math.max(deepest, best);
                    state[v] = 2;
                    depth--;
                }
            }
        }
        if (deepest > MAX_CHAIN) {
            throw new RenderException(ErrorCode.LIMIT_EXCEEDED, "SVG chains " + deepest
                    + " references (use, clip-path, mask, filter, pattern, marker, href…) one through another,"
                    + " above the limit of " + MAX_CHAIN);
        }
    }

    /** The cycle from {@code target}'s place on the path to the path's end, back to {@code target}. */
    private RenderException cycle(int[] path, int depth, int target) {
        int at = depth - 1;
        while (path[at] != target) {
            at--;
        }
        List<String> ids = new ArrayList<>();
        for (int i = at; i < depth; i++) {
            ids.add(quote(nodes.get(path[i])));
        }
        int length = ids.size();
        String shown = length <= MAX_QUOTED_IDS ? String.join(" → ", ids) + " → " + ids.get(0)
                : String.join(" → ", ids.subList(0, MAX_QUOTED_IDS)) + " → … (" + length + " elements)";
        return new RenderException(ErrorCode.PARSE_ERROR, "invalid SVG: it refers to itself (" + shown
                + "); a reference cycle is an error in SVG and cannot be drawn");
    }

    /**
     * An id for a message: {@code #id} if it is short and plain (letters, digits, {@code _ - . :}),
     * else the SVG element's name — an error message never carries arbitrary document text.
     */
    private static String quote(Element e) {
        if (e == null) {
            return "(the document's SVG fonts)";
        }
        String id = e.getAttributeNS(null, "id");
        boolean plain = !id.isEmpty() && id.length() <= MAX_QUOTED_ID;
        for (int i = 0; plain && i < id.length(); i++) {
            char c = id.charAt(i);
            plain = c < 128 && (Character.isLetterOrDigit(c) || c == '_' || c == '-' || c == '.' || c == ':');
        }
        if (plain) {
            return "#" + id;
        }
        String name = e.getLocalName();
        return SVGConstants.SVG_NAMESPACE_URI.equals(e.getNamespaceURI()) && name != null
                && name.length() <= MAX_QUOTED_ID && name.chars().allMatch(c -> c < 128 && Character.isLetter(c))
                ? "<" + name + ">" : "(an element)";
    }
}
