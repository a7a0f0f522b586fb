package io.qvm.worker;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.zip.GZIPOutputStream;

/**
 * SVGs made in code for the tests of embedded SVG images and DTD entities: those whose bytes are
 * too large or too repetitive to commit (nesting chains, decompression bombs, entity bombs).
 */
final class EmbeddedSvgs {

    static final String SVG_NS = "xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink'";
    /** A 20×20 red square. */
    static final String RED = "<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'>"
            + "<rect width='20' height='20' fill='#ff0000'/></svg>";

    private EmbeddedSvgs() {
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** {@code data:image/svg+xml;base64,…} of {@code svg}. */
    static String dataUrl(byte[] svg) {
        return "data:image/svg+xml;base64," + Base64.getEncoder().encodeToString(svg);
    }

    /** A 20×20 document that shows {@code href} as an image filling it. */
    static String embedding(String href) {
        return "<svg " + SVG_NS + " width='20' height='20'><image width='20' height='20' xlink:href='" + href
                + "'/></svg>";
    }

    /** {@link #RED} inside {@code levels} documents, each embedding the next as a data: URL. */
    static byte[] nested(int levels) {
        String svg = RED;
        for (int i = 0; i < levels; i++) {
            svg = embedding(dataUrl(utf8(svg)));
        }
        return utf8(svg);
    }

    static byte[] gzip(byte[] b) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(out)) {
            z.write(b);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    /** An svgz image that inflates to {@code inflatedBytes} (mostly one comment): a decompression bomb. */
    static byte[] svgzBomb(int inflatedBytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(out)) {
            z.write(utf8("<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'><!--"));
            byte[] chunk = new byte[64 * 1024];
            java.util.Arrays.fill(chunk, (byte) ' ');
            for (int n = 0; n < inflatedBytes; n += chunk.length) {
                z.write(chunk);
            }
            z.write(utf8("--></svg>"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return utf8(embedding(dataUrl(out.toByteArray())));
    }

    /**
     * An embedded SVG of {@code inner} elements, first in a document whose own {@code <use>}
     * fan-out (kept in {@code <defs>}, so never built) counts 199 400 elements: the tree's one
     * budget is spent by the outer document and the image together, and the image is refused when
     * it is loaded, before anything large is built.
     */
    static byte[] embeddedAfterUseFanOut(int inner) {
        String img = "<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'>" + "<g/>".repeat(inner - 1)
                + "</svg>";
        StringBuilder sb = new StringBuilder("<svg " + SVG_NS + " width='20' height='20'>");
        sb.append("<image width='20' height='20' xlink:href='").append(dataUrl(utf8(img))).append("'/>");
        sb.append("<defs><g id='a'>").append("<rect/>".repeat(1000)).append("</g>");
        sb.append("<use xlink:href='#a'/>".repeat(198)).append("</defs>");
        return utf8(sb.append("</svg>").toString());
    }

    /** A document with an internal DTD subset {@code decls} and body {@code body}. */
    static byte[] withEntities(String decls, String body) {
        return utf8("<?xml version='1.0'?><!DOCTYPE svg [" + decls + "]><svg xmlns='http://www.w3.org/2000/svg'"
                + " width='20' height='20'>" + body + "</svg>");
    }

    /** One small entity referenced {@code refs} times. */
    static byte[] entityExpansions(int refs) {
        return withEntities("<!ENTITY a 'x'>", "<text y='10'>" + "&a;".repeat(refs) + "</text>");
    }

    /** One entity of {@code chars} characters. */
    static byte[] bigEntity(int chars) {
        return withEntities("<!ENTITY a '" + "x".repeat(chars) + "'>", "<text y='10'>&a;</text>");
    }

    /** An entity of {@code chars} characters referenced {@code refs} times. */
    static byte[] entityTotal(int chars, int refs) {
        return withEntities("<!ENTITY a '" + "x".repeat(chars) + "'>", "<text y='10'>" + "&a;".repeat(refs)
                + "</text>");
    }

    /** An entity of {@code nodes} elements referenced {@code refs} times. */
    static byte[] entityNodes(int nodes, int refs) {
        return withEntities("<!ENTITY a '" + "<g/>".repeat(nodes) + "'>", "&a;".repeat(refs));
    }

    /**
     * {@code images} distinct embedded documents, each an element chain {@code depth} deep, inside a
     * document whose own elements nest two deep.
     */
    static byte[] deepEmbedded(int images, int depth) {
        StringBuilder sb = new StringBuilder("<svg " + SVG_NS + " width='20' height='20'>");
        for (int i = 0; i < images; i++) {
            String inner = "<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'><!--" + i + "-->"
                    + "<g>".repeat(depth - 2) + "<rect width='20' height='20' fill='#ff0000'/>" + "</g>".repeat(depth - 2)
                    + "</svg>";
            sb.append("<image width='20' height='20' xlink:href='").append(dataUrl(utf8(inner))).append("'/>");
        }
        return utf8(sb.append("</svg>").toString());
    }

    /**
     * {@code images} distinct embedded documents, each small but expanding an entity to
     * {@code charsEach} characters (within the limits of one document).
     */
    static byte[] entityExpandingImages(int images, int charsEach) {
        StringBuilder sb = new StringBuilder("<svg " + SVG_NS + " width='20' height='20'>");
        int refs = charsEach / 1000;
        for (int i = 0; i < images; i++) {
            String inner = "<?xml version='1.0'?><!DOCTYPE svg [<!ENTITY a '" + "x".repeat(1000) + "'>]>"
                    + "<svg xmlns='http://www.w3.org/2000/svg' width='20' height='20'><!--" + i + "--><desc>"
                    + "&a;".repeat(refs) + "</desc></svg>";
            sb.append("<image width='20' height='20' xlink:href='").append(dataUrl(utf8(inner))).append("'/>");
        }
        return utf8(sb.append("</svg>").toString());
    }
}
