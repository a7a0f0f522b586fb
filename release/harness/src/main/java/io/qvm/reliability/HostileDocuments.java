package io.qvm.reliability;

import io.qvm.protocol.RenderRequest;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.Deflater;

/**
 * The hostile share of the reliability run's load: one document per class the renderer must
 * refuse with a typed error and survive (the renderer's own corpus, {@code HostileCorpus}, has
 * many of each), documents that ask for more time than any deadline gives, and a slow but
 * legitimate document for the fault category. The release gate ({@code io.qvm.release.HostGate})
 * renders the refused cases through a staged image.
 */
public final class HostileDocuments {

    /** A document and the error code it must get. */
    public record Case(String name, RenderRequest request, String expected) {
        /**
         * Whether an outcome (an error code, or {@code LOST} and the reason) is this case's. A
         * document that times out may also meet the host's request deadline first, when the
         * worker's answer at its own (a second earlier) is late: the sandbox is then stopped,
         * which is the same limit holding.
         */
        public boolean accepts(String outcome) {
            return outcome.equals(expected) || expected.equals("TIMEOUT") && outcome.equals("LOST DEADLINE_EXCEEDED");
        }
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
                svg("self-reference", "<svg xmlns='http://www.w3.org/2000/svg' width='100' height='100'>"
                        + "<clipPath id='a'><rect width='10' height='10' clip-path='url(#a)'/></clipPath>"
                        + "<rect width='100' height='100' clip-path='url(#a)'/></svg>", "PARSE_ERROR"),
                svg("external-image", "<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink'"
                        + " width='10' height='10'><image width='10' height='10' xlink:href='http://10.0.2.2/x.png'/></svg>",
                        "UNSUPPORTED"),
                new Case("not-a-pdf", RenderRequest.pdf("%PDF-1.7\n% not really".getBytes(StandardCharsets.US_ASCII)),
                        "PARSE_ERROR"));
    }

    /**
     * Documents that are small, valid and within every size limit, but whose rendering takes
     * minutes even at native speed, so each must end at a deadline (see {@link Case#accepts}).
     * Measured on this host's JVM at native speed: one feTurbulence layer of 2000 × 2000 px took
     * 2.3 s and 50 layers 63 s (the SVG has 100); the PDF (one page filled 2,097,152 times) had not
     * finished after 120 s. They stop differently: PDFBox polls the cancellation between
     * operators, so the PDF ends at the worker's render deadline and the worker goes on; Batik
     * computes a filter tile without looking at its halt flag, so the turbulence can outlast the
     * watchdog's grace, and then the worker answers TIMEOUT and exits for the host to replace it
     * (at native speed here it ended 504 ms after the deadline, past the 500 ms grace) — a document
     * that kills the worker, within the limits.
     */
    public static List<Case> timesOut() {
        StringBuilder svg = new StringBuilder("<svg xmlns='http://www.w3.org/2000/svg' width='2000' height='2000'>");
        for (int i = 0; i < 100; i++) {
            svg.append("<filter id='t").append(i).append("' x='0' y='0' width='1' height='1'><feTurbulence seed='")
                    .append(i).append("' baseFrequency='0.01' numOctaves='8'/></filter><rect width='2000' height='2000'"
                            + " opacity='0.5' filter='url(#t").append(i).append(")'/>");
        }
        return List.of(svg("endless-turbulence", svg.append("</svg>").toString(), "TIMEOUT"),
                new Case("endless-fills", RenderRequest.pdf(endlessFills()), "TIMEOUT"));
    }

    /**
     * The load's hostile share, in the order it cycles through: the refused cases with one that
     * times out at the start and one in the middle, so even a short slice meets a deadline.
     */
    public static List<Case> load() {
        List<Case> refused = all();
        List<Case> slow = timesOut();
        List<Case> mix = new ArrayList<>();
        mix.add(slow.get(0));
        mix.addAll(refused.subList(0, refused.size() / 2));
        mix.add(slow.get(1));
        mix.addAll(refused.subList(refused.size() / 2, refused.size()));
        return List.copyOf(mix);
    }

    /** A one-page PDF whose content, deflated, fills the whole page 512 × 4096 times. */
    private static byte[] endlessFills() {
        byte[] op = "0 0 612 792 re f\n".getBytes(StandardCharsets.US_ASCII);
        Deflater deflater = new Deflater(Deflater.BEST_COMPRESSION);
        ByteArrayOutputStream content = new ByteArrayOutputStream();
        byte[] chunk = new byte[op.length * 4096];
        for (int i = 0; i < 4096; i++) {
            System.arraycopy(op, 0, chunk, i * op.length, op.length);
        }
        byte[] buf = new byte[64 << 10];
        for (int chunks = 0; chunks < 512; chunks++) {
            deflater.setInput(chunk);
            while (!deflater.needsInput()) {
                content.write(buf, 0, deflater.deflate(buf));
            }
        }
        deflater.finish();
        while (!deflater.finished()) {
            content.write(buf, 0, deflater.deflate(buf));
        }
        deflater.end();
        byte[] stream = content.toByteArray();
        ByteArrayOutputStream pdf = new ByteArrayOutputStream();
        List<Integer> offsets = new ArrayList<>();
        ascii(pdf, "%PDF-1.7\n");
        String[] objects = {"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            "<< /Length " + stream.length + " /Filter /FlateDecode >>"};
        for (int i = 0; i < objects.length; i++) {
            offsets.add(pdf.size());
            ascii(pdf, (i + 1) + " 0 obj\n" + objects[i] + "\n");
            if (i == 3) {
                ascii(pdf, "stream\n");
                pdf.writeBytes(stream);
                ascii(pdf, "\nendstream\n");
            }
            ascii(pdf, "endobj\n");
        }
        int xref = pdf.size();
        StringBuilder x = new StringBuilder("xref\n0 " + (objects.length + 1) + "\n0000000000 65535 f \n");
        offsets.forEach(o -> x.append(String.format("%010d 00000 n \n", o)));
        ascii(pdf, x + "trailer\n<< /Size " + (objects.length + 1) + " /Root 1 0 R >>\nstartxref\n" + xref + "\n%%EOF\n");
        return pdf.toByteArray();
    }

    private static void ascii(ByteArrayOutputStream out, String s) {
        out.writeBytes(s.getBytes(StandardCharsets.US_ASCII));
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
