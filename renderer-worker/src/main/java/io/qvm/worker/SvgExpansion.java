package io.qvm.worker;

import java.util.HashMap;
import java.util.Map;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Counts how many elements Batik would build for a document, with every {@code <use>} counted
 * as a full copy of what it references — the SVG form of "billion laughs" (ten {@code <use>} of
 * a group of ten {@code <use>} of …) is a few hundred bytes that expand to millions of nodes.
 * The count is spent from the render's {@link SvgBudget} (shared with the SVG images the document
 * embeds), before any building. Only local references ({@code #id}) count: everything else is
 * refused later anyway.
 */
final class SvgExpansion {

    private static final String XLINK = "http://www.w3.org/1999/xlink";

    private final Document doc;
    private final Map<Element, Long> memo = new HashMap<>();
    private final Map<Element, Boolean> inProgress = new HashMap<>();

    private SvgExpansion(Document doc) {
        this.doc = doc;
    }

    /**
     * The elements {@code doc} expands to; counting stops a little above
     * {@link LimitChecker#MAX_SVG_EXPANDED_ELEMENTS}, so a bomb costs no more than the limit to count.
     */
    static long count(Document doc) {
        return new SvgExpansion(doc).count(doc.getDocumentElement());
    }

    private long count(Element e) {
        Long known = memo.get(e);
        if (known != null) {
            return known;
        }
        if (inProgress.put(e, Boolean.TRUE) != null) {
            return 1; // a cycle: Batik refuses it itself (circular dependency)
        }
        long n = 1;
        for (Node c = e.getFirstChild(); c != null && n <= LimitChecker.MAX_SVG_EXPANDED_ELEMENTS; c = c.getNextSibling()) {
            if (c instanceof Element child) {
                n = saturatingAdd(n, count(child));
            }
        }
        if ("use".equals(e.getLocalName())) {
            Element target = localTarget(e);
            if (target != null) {
                n = saturatingAdd(n, count(target));
            }
        }
        inProgress.remove(e);
        memo.put(e, n);
        return n;
    }

    private Element localTarget(Element use) {
        String href = use.getAttributeNS(XLINK, "href");
        if (href.isEmpty()) {
            href = use.getAttributeNS(null, "href");
        }
        if (!href.startsWith("#") || href.length() < 2) {
            return null;
        }
        return doc.getElementById(href.substring(1));
    }

    private static long saturatingAdd(long a, long b) {
        long r = a + b;
        return r < 0 ? Long.MAX_VALUE : r;
    }
}
