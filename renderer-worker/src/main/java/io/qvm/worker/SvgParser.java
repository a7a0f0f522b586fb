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
 *   <li>a DOCTYPE is accepted (exported SVGs carry the standard one) but any entity declaration
 *       in it — internal (billion laughs) or external (XXE), general, parameter or unparsed — stops
 *       the parse at the declaration, before anything could be expanded: UNSUPPORTED;</li>
 *   <li>element nesting deeper than {@link LimitChecker#MAX_SVG_DEPTH}: LIMIT_EXCEEDED (Batik
 *       recurses per level);</li>
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

    static SVGOMDocument parse(byte[] svg) throws RenderException {
        if (svg.length == 0) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "empty document");
        }
        Document plain = parseXml(svg);
        Element root = plain.getDocumentElement();
        if (root == null || !SVGConstants.SVG_NAMESPACE_URI.equals(root.getNamespaceURI())
                || !SVGConstants.SVG_SVG_TAG.equals(root.getLocalName())) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "root element is not <svg> in the SVG namespace");
        }
        SVGOMDocument doc = (SVGOMDocument) DOMUtilities.deepCloneDocument(plain,
                SVGDOMImplementation.getDOMImplementation());
        doc.setParsedURL(new ParsedURL(UrlLockdown.DOCUMENT_BASE));
        doc.setDocumentURI(UrlLockdown.DOCUMENT_BASE);
        return doc;
    }

    private static Document parseXml(byte[] svg) throws RenderException {
        DOMResult result = new DOMResult();
        try {
            TransformerHandler dom = ((SAXTransformerFactory) TransformerFactory.newDefaultInstance())
                    .newTransformerHandler();
            dom.setResult(result);
            SAXParser parser = SAX.newSAXParser();
            parser.setProperty(XMLConstants.ACCESS_EXTERNAL_DTD, "");
            parser.setProperty(XMLConstants.ACCESS_EXTERNAL_SCHEMA, "");
            XMLReader reader = parser.getXMLReader();
            Guard guard = new Guard(dom);
            reader.setContentHandler(guard);
            reader.setDTDHandler(guard);
            reader.setEntityResolver(guard);
            reader.setErrorHandler(guard);
            reader.setProperty("http://xml.org/sax/properties/declaration-handler", guard);
            reader.parse(new InputSource(new ByteArrayInputStream(svg)));
        } catch (Refused e) {
            throw e.error;
        } catch (SAXParseException e) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG is not well-formed XML (line " + e.getLineNumber()
                    + ", column " + e.getColumnNumber() + ")");
        } catch (SAXException | IOException e) {
            throw new RenderException(ErrorCode.PARSE_ERROR, "SVG is not well-formed XML");
        } catch (ParserConfigurationException | TransformerConfigurationException e) {
            throw new RenderException(ErrorCode.INTERNAL, "XML parser cannot be configured");
        }
        return (Document) result.getNode();
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
     * Passes content to the DOM builder, counts depth, and refuses every entity declaration and
     * every external fetch.
     */
    private static final class Guard extends DefaultHandler implements DeclHandler {
        private final ContentHandler next;
        private int depth;

        Guard(ContentHandler next) {
            this.next = next;
        }

        private static Refused entities() {
            return new Refused(new RenderException(ErrorCode.UNSUPPORTED,
                    "SVG declares DTD entities; entities are not supported"));
        }

        @Override
        public void internalEntityDecl(String name, String value) throws SAXException {
            throw entities();
        }

        @Override
        public void externalEntityDecl(String name, String publicId, String systemId) throws SAXException {
            throw entities();
        }

        @Override
        public void unparsedEntityDecl(String name, String publicId, String systemId, String notationName)
                throws SAXException {
            throw entities();
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
            if (++depth > LimitChecker.MAX_SVG_DEPTH) {
                throw new Refused(new RenderException(ErrorCode.LIMIT_EXCEEDED,
                        "SVG nests elements deeper than " + LimitChecker.MAX_SVG_DEPTH + " levels"));
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
            throw entities();
        }
    }
}
