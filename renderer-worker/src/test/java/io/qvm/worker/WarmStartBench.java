package io.qvm.worker;

import io.qvm.protocol.Messages;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameKind;
import io.qvm.protocol.RenderRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Start-up figures for the ADR (not a test): starts the worker command given as arguments N
 * times and prints, per run, milliseconds from process start to READY, to the first SVG result
 * and to the first PDF result after READY. Run with the shaded jar and the test classes:
 *
 * <pre>
 * java -cp target/renderer-worker.jar:target/test-classes io.qvm.worker.WarmStartBench 5 \
 *     /path/to/java -XX:SharedArchiveFile=/tmp/worker.jsa -jar target/renderer-worker.jar
 * </pre>
 */
public final class WarmStartBench {

    private WarmStartBench() {
    }

    public static void main(String[] args) throws Exception {
        int runs = Integer.parseInt(args[0]);
        List<String> cmd = List.of(Arrays.copyOfRange(args, 1, args.length));
        byte[] svg = Corpus.bytes("ok/text.svg");
        byte[] pdf = Pdfs.squareAndText();
        List<long[]> rows = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            long t0 = System.nanoTime();
            Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            try (ChildWorker w = ChildWorker.attach(p)) {
                w.handshake(ChildWorker.LIMITS);
                long ready = System.nanoTime();
                w.send(Messages.toFrame(RenderRequest.svg(svg), 1));
                Messages.renderResult(w.receive());
                long firstSvg = System.nanoTime();
                w.send(Messages.toFrame(RenderRequest.pdf(pdf), 2));
                Messages.renderResult(w.receive());
                long firstPdf = System.nanoTime();
                w.send(Frame.of(FrameKind.GOODBYE, 3, (byte[]) null));
                w.receive();
                w.waitFor(30);
                rows.add(new long[] {ms(ready - t0), ms(firstSvg - ready), ms(firstPdf - firstSvg)});
            }
        }
        System.out.println("run ready_ms first_svg_ms first_pdf_ms");
        for (int i = 0; i < rows.size(); i++) {
            long[] r = rows.get(i);
            System.out.println(i + " " + r[0] + " " + r[1] + " " + r[2]);
        }
        rows.sort((a, b) -> Long.compare(a[0], b[0]));
        System.out.println("median ready_ms " + rows.get(rows.size() / 2)[0]);
    }

    private static long ms(long nanos) {
        return nanos / 1_000_000;
    }
}
