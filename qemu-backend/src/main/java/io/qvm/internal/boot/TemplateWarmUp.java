package io.qvm.internal.boot;

import io.qvm.RenderFailedException;
import io.qvm.internal.sandbox.QemuSandbox;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The renders a template VM does before it is saved, so that every clone starts where an
 * ordinary document's first render in it would otherwise have to get to: Batik's and PDFBox's
 * classes loaded and initialized, each of the guest's font faces loaded, PDFBox's mapping of the
 * standard 14 fonts built, the PNG and JPEG decoders, gradients, clipping and filters set up, and
 * the hot loops of all of that compiled by the JIT. A clone restores all of it with the
 * template's memory; only the emulator's translation of that code, under TCG, is redone in each.
 *
 * <p>Measured before this existed (2026-12-06, TCG, a fresh clone of a template whose worker had
 * warmed only on its own two small documents): {@code shapes.svg} took 9.5 s in a clone the
 * first time and 1.4 s the second, {@code text.svg} 10.7 and 2.4 s, {@code page.pdf} 13.6 and
 * 4.8 s. Every fresh clone paid that again for the first document of its kind.
 *
 * <p>The documents are qvm's own (resources under {@code io/qvm/warmup}), rendered through the
 * template VM's session like any request: a clone's worker has rendered exactly these before its
 * first document. How a refusal, a TIMEOUT, a lost sandbox and the boot deadline end or shorten
 * the warm-up, and the STATUS proof before the save, are {@link #run}'s.
 */
final class TemplateWarmUp {

    /** The documents, most-used features first; each round renders all of them once. */
    static final List<String> DOCUMENTS = List.of("text.svg", "shapes.svg", "page.pdf");

    /**
     * Rounds over {@link #DOCUMENTS}. One: a second round (which took 14 s more here) made no
     * difference in the clones that could be told from the noise (docs/measured.md).
     */
    static final int ROUNDS = 1;

    private TemplateWarmUp() {
    }

    /** What a warm-up did: renders that ran, documents answered with an error, and whether it was cut short. */
    record Result(int rendered, List<String> refused, boolean cutShort, Duration took, List<String> firstRound) {

        String summary() {
            return rendered + " renders in " + took.toMillis() + " ms (first round " + String.join(", ", firstRound) + ")"
                    + (refused.isEmpty() ? "" : "; refused (each said above with its code): " + refused)
                    + (cutShort ? "; cut short (the boot deadline's room for the save and the first restore, or a "
                    + "TIMEOUT or INTERNAL answer)" : "");
        }
    }

    /** What must be left of the boot deadline for another warm-up render: a quarter of the boot timeout, at least 30 s. */
    static Duration margin(Duration bootTimeout) {
        Duration quarter = bootTimeout.dividedBy(4);
        return quarter.compareTo(Duration.ofSeconds(30)) >= 0 ? quarter : Duration.ofSeconds(30);
    }

    /**
     * Renders {@link #DOCUMENTS} {@link #ROUNDS} times in {@code vm}, then proves the worker still
     * answers (a STATUS round trip) before anything is saved.
     *
     * <p>A render starts only while what is left of the deadline, less the {@link #margin}, is at
     * least the longest warm-up render so far: a render started just above the margin could
     * otherwise eat the save's and the first restore's time. A document answered with TIMEOUT or
     * INTERNAL ends the warm-up (a host too loaded for it, or a worker in trouble); one refused
     * for the session's limits is skipped. Either way the STATUS proof decides: a worker that
     * exits after a render it could not stop (the watchdog's STUCK exit) fails the build, so no
     * template holds a dying worker.
     *
     * @throws io.qvm.SandboxException the template VM was lost (or broke the protocol) while warming
     */
    static Result run(QemuSandbox vm, long deadlineNanos, Consumer<String> progress) {
        Duration margin = margin(vm.config().bootTimeout());
        long t0 = System.nanoTime();
        long longest = 0;
        int rendered = 0;
        List<String> refused = new ArrayList<>();
        List<String> firstRound = new ArrayList<>();
        boolean cutShort = false;
        warming:
        for (int round = 0; round < ROUNDS; round++) {
            for (String name : DOCUMENTS) {
                if (refused.contains(name)) {
                    continue;
                }
                if (deadlineNanos - System.nanoTime() - margin.toNanos() < longest) {
                    cutShort = true;
                    break warming;
                }
                long r0 = System.nanoTime();
                try {
                    RenderResult r = vm.render(request(name));
                    rendered++;
                    if (round == 0) {
                        firstRound.add(name + " " + Deadlines.since(r0).toMillis() + " ms (worker " + r.renderMillis() + ")");
                    }
                } catch (RenderFailedException e) {
                    refused.add(name);
                    progress.accept("warm-up document " + name + " refused (" + e.code() + "): " + e.getMessage());
                    if (e.code() == ErrorCode.TIMEOUT || e.code() == ErrorCode.INTERNAL) {
                        cutShort = true;
                        break warming;
                    }
                } finally {
                    longest = Math.max(longest, System.nanoTime() - r0);
                }
            }
        }
        vm.status(); // the worker still answers after what it rendered: else the build fails here
        return new Result(rendered, refused, cutShort, Deadlines.since(t0), firstRound);
    }

    /**
     * The template key's {@code warm-up} input of a template VM warmed so: the SHA-256 of the
     * rounds and of every document's name and bytes (hex). A changed document is another template.
     */
    static String fingerprint() {
        return Fingerprint.VALUE;
    }

    /** Computed once: the documents are the jar's. */
    private static final class Fingerprint {
        static final String VALUE = compute();
    }

    private static String compute() {
        try {
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            md.update(("rounds=" + ROUNDS + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
            for (String name : DOCUMENTS) {
                byte[] doc = resource(name);
                md.update((name + "=" + doc.length + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
                md.update(doc);
            }
            return java.util.HexFormat.of().formatHex(md.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static RenderRequest request(String name) {
        byte[] doc = resource(name);
        return name.endsWith(".pdf") ? RenderRequest.pdf(doc) : RenderRequest.svg(doc);
    }

    private static byte[] resource(String name) {
        String path = "/io/qvm/warmup/" + name;
        try (InputStream in = TemplateWarmUp.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + path);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
