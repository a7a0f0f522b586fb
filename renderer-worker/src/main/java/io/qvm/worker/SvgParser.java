package io.qvm.worker;

import io.qvm.protocol.ErrorCode;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import javax.xml.XMLConstants;
import javax.xml.parsers.ParserConfigurationException;
import javax.xml.parsers.SAXParser;
import javax.xml.parsers.SAXParserFactory;
import javax.xml.transform.TransformerConfigurationException;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMResult;
import javax.xml.transform.sax.SAXTransformerFactory;
import javax.xml.transform.sax.TransformerHandler;
import org.apache.batik.anim.dom.SVGDOMImplementation;
import org.apache.batik.anim.dom.SVGOMDocument;
import org.apache.batik.dom.util.DOMUtilities;
import org.apache.batik.util.ParsedURL;
import org.apache.batik.util.SVGConstants;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.xml.sax.Attributes;
import org.xml.sax.ContentHandler;
import org.xml.sax.InputSource;
import org.xml.sax.Locator;
import org.xml.sax.SAXException;
import org.xml.sax.SAXParseException;
import org.xml.sax.XMLReader;
import org.xml.sax.ext.DeclHandler;
import org.xml.sax.helpers.DefaultHandler;

/**
 * Parses untrusted SVG bytes into a Batik {@link SVGOMDocument} with the JDK's own SAX parser,
 * hardened — Batik's parser never sees the bytes (its entity resolver would fetch unknown DTDs).
 *
 * <ul>
 *   <li>no external DTD, no external general or parameter entities, no XInclude, no schema or DTD
 *       access of any scheme ({@code ACCESS_EXTERNAL_DTD/SCHEMA = ""}), secure processing on, an
 *       entity resolver that refuses everything;</li>
 *   <li>a DOCTYPE is accepted (exported SVGs carry the standard one), and so are internal
 *       entities, general and parameter ({@code <!ENTITY ns_svg "http://www.w3.org/2000/svg">}, as
 *       Adobe Illustrator writes; an entity that is markup; a parameter entity that declares
 *       entities), whose expansion the JDK parser bounds: at most
 *       {@link LimitChecker#MAX_SVG_ENTITY_EXPANSIONS} references expanded, each entity at most
 *       {@link LimitChecker#MAX_SVG_ENTITY_CHARS} characters, all expansions together at most
 *       {@link LimitChecker#MAX_SVG_ENTITY_TOTAL_CHARS} characters and
 *       {@link LimitChecker#MAX_SVG_EXPANDED_ELEMENTS} nodes — past any of them (billion laughs):
 *       LIMIT_EXCEEDED;</li>
 *   <li>an external entity, general or parameter, or an unparsed one stops the parse at its
 *       declaration, before anything could be fetched (XXE); an entity the document references
 *       but does not declare stops it too: UNSUPPORTED;</li>
 *   <li>element nesting deeper than {@link LimitChecker#MAX_SVG_DEPTH} (or the depth the caller
 *       allows, for an embedded document): LIMIT_EXCEEDED (Batik recurses per level); other
 *       limits of the JDK parser (attributes per element, name length): LIMIT_EXCEEDED;</li>
 *   <li>the document gets the synthetic, unresolvable base {@link UrlLockdown#DOCUMENT_BASE}.</li>
 * </ul>
 * Anything not well-formed, or whose root is not {@code <svg>} in the SVG namespace: PARSE_ERROR.
 */
final class SvgParser {

    private static final SAXParserFactory SAX = hardenedFactory();

    private SvgParser() {
    }

    /** A refusal (as opposed to a syntax error), carried through the parser as a SAXException. */
    private static final class Refused extends SAXException {
        private static final long serialVersionUID = 1L;
        final transient RenderException error;

        Refused(RenderException error) {
            super(error.getMessage());
            this.error = error;
        }
    }

    /**
     * A parsed document and how deep its elements nest.
     *
     * @param document the Batik document
     * @param depth the deepest element nesting in it (the root is level 1)
     * @param chars the characters of its text and attribute values, entities expanded
     */
    record Parsed(SVGOMDocument document, int depth, long chars) {
    }

    static SVGOMDocument parse(byte[] svg) throws RenderException {
        return parse(svg, LimitChecker.MAX_SVG_DEPTH, Long.MAX_VALUE).document();
    }

    /**
     * Parses {@code svg}, refusing element nesting deeper than {@code maxDepth} and text and
     * attribute values (entities expanded) of more than {@code maxChars} characters in all.
     */
    static Parsed parse(byte[] svg, int maxDepth, long maxChars) throws RenderException {
        if (svg.length == 0) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "empty document");
        }
        Guard guard = new Guard(maxDepth, maxChars);
        Document plain = parseXml(svg, guard);
        Element root = plain.getDocumentElement();
        if (root == null || !SVGConstants.SVG_NAMESPACE_URI.equals(root.getNamespaceURI())
                || !SVGConstants.SVG_SVG_TAG.equals(root.getLocalName())) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "root element is not <svg> in the SVG namespace");
        }
        SVGOMDocument doc = (SVGOMDocument) DOMUtilities.deepCloneDocument(plain,
                SVGDOMImplementation.getDOMImplementation());
        doc.setParsedURL(new ParsedURL(UrlLockdown.DOCUMENT_BASE));
        doc.setDocumentURI(UrlLockdown.DOCUMENT_BASE);
        return new Parsed(doc, guard.maxDepth, guard.chars);
    }

    private static Document parseXml(byte[] svg, Guard guard) throws RenderException {
        DOMResult result = new DOMResult();
        try {
            TransformerHandler dom = ((SAXTransformerFactory) TransformerFactory.newDefaultInstance())
                    .newTransformerHandler();
            dom.setResult(result);
            SAXParser parser = SAX.newSAXParser();
            parser.setProperty(XMLConstants.ACCESS_EXTERNAL_DTD, "");
            parser.setProperty(XMLConstants.ACCESS_EXTERNAL_SCHEMA, "");
            boundEntities(parser);
            XMLReader reader = parser.getXMLReader();
            guard.next = dom;
            reader.setContentHandler(guard);
            reader.setDTDHandler(guard);
            reader.setEntityResolver(guard);
            reader.setErrorHandler(guard);
            reader.setProperty("http://xml.org/sax/properties/declaration-handler", guard);
            reader.parse(new InputSource(new ByteArrayInputStream(svg)));
        } catch (Refused e) {
            throw e.error;
        } catch (SAXParseException e) {
            RenderException limit = parserLimit(e);
            if (limit != null) {
                throw limit;
            }
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG is not well-formed XML (line " + e.getLineNumber()
                    + ", column " + e.getColumnNumber() + ")");
        } catch (SAXException | IOException e) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG is not well-formed XML");
        } catch (ParserConfigurationException | TransformerConfigurationException e) {
            throw new RenderException(ErrorCode.INTERNAL, "XML parser cannot be configured");
        }
        return (Document) result.getNode();
    }

    /** The JDK parser's entity limits (its defaults are far looser), set on every parser. */
    private static void boundEntities(SAXParser parser) throws SAXException {
        parser.setProperty("jdk.xml.entityExpansionLimit", String.valueOf(LimitChecker.MAX_SVG_ENTITY_EXPANSIONS));
        parser.setProperty("jdk.xml.maxGeneralEntitySizeLimit", String.valueOf(LimitChecker.MAX_SVG_ENTITY_CHARS));
        parser.setProperty("jdk.xml.maxParameterEntitySizeLimit", String.valueOf(LimitChecker.MAX_SVG_ENTITY_CHARS));
        parser.setProperty("jdk.xml.totalEntitySizeLimit", String.valueOf(LimitChecker.MAX_SVG_ENTITY_TOTAL_CHARS));
        parser.setProperty("jdk.xml.entityReplacementLimit", String.valueOf(LimitChecker.MAX_SVG_EXPANDED_ELEMENTS));
    }

    /**
     * LIMIT_EXCEEDED for the JDK parser's limit errors, null for other errors. They are told apart by
     * the code that starts their message ({@code JAXP0001000n}: 1 expansions, 2 attributes per element,
     * 3 one entity's size, 4 all entities' size, 5 name length, 6 element depth, 7 nodes from
     * entities); the rest of the message may quote the document (an entity's name) and is dropped.
     */
    private static RenderException parserLimit(SAXParseException e) {
        String m = e.getMessage();
        if (m == null || !m.startsWith("JAXP0001000") || m.length() < 12) {
            return null;
        }
        String what = switch (m.charAt(11)) {
            case '1' -> "more than " + LimitChecker.MAX_SVG_ENTITY_EXPANSIONS + " entity expansions";
            case '2' -> "an element with too many attributes";
            case '3' -> "an entity longer than " + LimitChecker.MAX_SVG_ENTITY_CHARS + " characters";
            case '4' -> "entities that expand to more than " + LimitChecker.MAX_SVG_ENTITY_TOTAL_CHARS + " characters";
            case '5' -> "a name that is too long";
            case '6' -> "elements nested too deeply";
            case '7' -> "entities that expand to more than " + LimitChecker.MAX_SVG_EXPANDED_ELEMENTS + " nodes";
            default -> null;
        };
        return what == null ? null : new RenderException(ErrorCode.LIMIT_EXCEEDED, "SVG has " + what);
    }

    private static SAXParserFactory hardenedFactory() {
        SAXParserFactory f = SAXParserFactory.newDefaultInstance();
        f.setNamespaceAware(true);
        f.setValidating(false);
        f.setXIncludeAware(false);
        try {
            f.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
            f.setFeature("http://xml.org/sax/features/external-general-entities", false);
            f.setFeature("http://xml.org/sax/features/external-parameter-entities", false);
            f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
        } catch (ParserConfigurationException | SAXException e) {
            throw new IllegalStateException("the JDK's SAX parser lacks a hardening feature", e);
        }
        return f;
    }

    /**
     * Passes content to the DOM builder, counts depth, lets internal entity declarations through and
     * refuses external and unparsed ones, undeclared references and every external fetch.
     */
    private static final class Guard extends DefaultHandler implements DeclHandler {
        private final int depthLimit;
        private ContentHandler next;
        private int depth;
        private int maxDepth;
        private final long charLimit;
        private long chars;

        Guard(int depthLimit, long charLimit) {
            this.depthLimit = depthLimit;
            this.charLimit = charLimit;
        }

        private void spend(long n) throws Refused {
            chars += n;
            if (chars > charLimit) {
                throw new Refused(new RenderException(ErrorCode.LIMIT_EXCEEDED,
                        "embedded SVG images expand to more characters than the request may carry"));
            }
        }

        private static Refused externalEntity() {
            return new Refused(new RenderException(ErrorCode.UNSUPPORTED,
                    "SVG declares an external or unparsed entity; only internal entities are supported"));
        }

        @Override
        public void internalEntityDecl(String name, String value) {
            // Allowed: the parser bounds the expansion (boundEntities).
        }

        @Override
        public void externalEntityDecl(String name, String publicId, String systemId) throws SAXException {
            throw externalEntity();
        }

        @Override
        public void unparsedEntityDecl(String name, String publicId, String systemId, String notationName)
                throws SAXException {
            throw externalEntity();
        }

        @Override
        public void elementDecl(String name, String model) {
        }

        @Override
        public void attributeDecl(String eName, String aName, String type, String mode, String value) {
        }

        @Override
        public InputSource resolveEntity(String publicId, String systemId) throws SAXException {
            throw new Refused(new RenderException(ErrorCode.UNSUPPORTED, "SVG refers to an external entity or DTD"));
        }

        @Override
        public void fatalError(SAXParseException e) throws SAXException {
            throw e;
        }

        @Override
        public void error(SAXParseException e) {
        }

        @Override
        public void warning(SAXParseException e) {
        }

        @Override
        public void setDocumentLocator(Locator locator) {
            next.setDocumentLocator(locator);
        }

        @Override
        public void startDocument() throws SAXException {
            next.startDocument();
        }

        @Override
        public void endDocument() throws SAXException {
            next.endDocument();
        }

        @Override
        public void startPrefixMapping(String prefix, String uri) throws SAXException {
            next.startPrefixMapping(prefix, uri);
        }

        @Override
        public void endPrefixMapping(String prefix) throws SAXException {
            next.endPrefixMapping(prefix);
        }

        @Override
        public void startElement(String uri, String localName, String qName, Attributes atts) throws SAXException {
            if (++depth > depthLimit) {
                throw new Refused(new RenderException(ErrorCode.LIMIT_EXCEEDED, "SVG nests elements deeper than "
                        + LimitChecker.MAX_SVG_DEPTH + " levels"
                        + (depthLimit < LimitChecker.MAX_SVG_DEPTH ? " (counting the documents it is embedded in)" : "")));
            }
            maxDepth = Math.max(maxDepth, depth);
            for (int i = 0; i < atts.getLength(); i++) {
                spend(atts.getValue(i).length());
            }
            next.startElement(uri, localName, qName, atts);
        }

        @Override
        public void endElement(String uri, String localName, String qName) throws SAXException {
            depth--;
            next.endElement(uri, localName, qName);
        }

        @Override
        public void characters(char[] ch, int start, int length) throws SAXException {
            spend(length);
            next.characters(ch, start, length);
        }

        @Override
        public void ignorableWhitespace(char[] ch, int start, int length) throws SAXException {
            next.ignorableWhitespace(ch, start, length);
        }

        @Override
        public void processingInstruction(String target, String data) {
            // Dropped: <?xml-stylesheet?> would name an external style sheet.
        }

        @Override
        public void skippedEntity(String name) throws SAXException {
            throw new Refused(new RenderException(ErrorCode.UNSUPPORTED,
                    "SVG refers to an entity it does not declare"));
        }
    }
}
