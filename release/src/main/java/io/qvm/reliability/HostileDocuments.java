package io.qvm.reliability;

import io.qvm.protocol.RenderRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The hostile share of the reliability run's load: one document per class the renderer must
 * refuse with a typed error and survive (the renderer's own corpus, {@code HostileCorpus}, has
 * many of each), and a slow but legitimate document for the fault category. The release gate
 * ({@code io.qvm.release.HostGate}) renders the same cases through a staged image.
 */
public final class HostileDocuments {

    /** A document and the error code it must get. */
    public record Case(String name, RenderRequest request, String expected) {
    }

    private HostileDocuments() {
    }

    /** One case per class of refusal; the release gate renders them too. */
    public static List<Case> all() {
        return List.of(
                svg("xxe", "<?xml version='1.0'?><!DOCTYPE svg [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>"
                        + "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'><text>&x;</text></svg>",
                        "UNSUPPORTED"),
                svg("billion-laughs", laughs(), "LIMIT_EXCEEDED"),
                svg("dash-count", "<svg xmlns='http://www.w3.org/2000/svg' width='100' height='100'>"
                        + "<path d='M0 50 L100000 50' stroke='black' stroke-dasharray='0.001'/></svg>", "LIMIT_EXCEEDED"),
                svg("morphology-radius", "<svg xmlns='http://www.w3.org/2000/svg' width='100' height='100'>"
                        + "<filter id='f'><feMorphology radius='1000000000'/></filter>"
                        + "<rect width='100' height='100' filter='url(#f)'/></svg>", "LIMIT_EXCEEDED"),
                svg("external-image", "<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink'"
                        + " width='10' height='10'><image width='10' height='10' xlink:href='http://10.0.2.2/x.png'/></svg>",
                        "UNSUPPORTED"),
                new Case("not-a-pdf", RenderRequest.pdf("%PDF-1.7\n% not really".getBytes(StandardCharsets.US_ASCII)),
                        "PARSE_ERROR"));
    }

    /** An SVG whose turbulence takes seconds to render under TCG: a request that is in flight when faulted. */
    static byte[] slowSvg() {
        return ("<svg xmlns='http://www.w3.org/2000/svg' width='2000' height='2000'><filter id='t' x='0' y='0' "
                + "width='1' height='1'><feTurbulence baseFrequency='0.01' numOctaves='8'/></filter>"
                + "<rect width='2000' height='2000' filter='url(#t)'/></svg>").getBytes(StandardCharsets.UTF_8);
    }

    private static Case svg(String name, String doc, String expected) {
        return new Case(name, RenderRequest.svg(doc.getBytes(StandardCharsets.UTF_8)), expected);
    }

    private static String laughs() {
        StringBuilder sb = new StringBuilder("<?xml version='1.0'?><!DOCTYPE svg [<!ENTITY l0 'lol'>");
        for (int i = 1; i <= 9; i++) {
            sb.append("<!ENTITY l").append(i).append(" '").append(("&l" + (i - 1) + ";").repeat(10)).append("'>");
        }
        return sb.append("]><svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'><text>&l9;</text></svg>")
                .toString();
    }
}
