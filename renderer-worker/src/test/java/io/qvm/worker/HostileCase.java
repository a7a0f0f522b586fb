package io.qvm.worker;

import io.qvm.protocol.RenderRequest;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * One document of the hostile corpus: the class of attack (or of safe document that must not be
 * refused) it stands for, how to make its bytes, and the outcome the worker must give — {@code OK}
 * (a PNG of {@code width}×{@code height} when those are not 0) or the name of an
 * {@link io.qvm.protocol.ErrorCode}. Run on the host ({@code HostileCorpusTest}) and in the guest
 * ({@code HostileCorpusE2ETest}); in both the worker must stay alive after every case.
 *
 * @param attackClass what the case stands for, e.g. {@code svg-dash-count}, {@code pdf-smask-size}
 * @param name a short unique name
 * @param request the render request (document bytes made on demand)
 * @param expected {@code OK} or an error code name
 * @param width expected PNG width for {@code OK}, or 0 to accept any
 * @param height expected PNG height for {@code OK}, or 0 to accept any
 */
record HostileCase(String attackClass, String name, Supplier<RenderRequest> request, String expected, int width,
        int height) {

    HostileCase {
        Objects.requireNonNull(attackClass, "attackClass");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(expected, "expected");
    }

    /** A case whose document must fail with {@code code}. */
    static HostileCase refused(String attackClass, String name, Supplier<RenderRequest> request, String code) {
        return new HostileCase(attackClass, name, request, code, 0, 0);
    }

    /** A case whose document must render (to {@code width}×{@code height}, or any size when 0). */
    static HostileCase renders(String attackClass, String name, Supplier<RenderRequest> request, int width,
            int height) {
        return new HostileCase(attackClass, name, request, "OK", width, height);
    }

    /** An SVG from {@code src/test/resources/corpus/}. */
    static Supplier<RenderRequest> svgFile(String corpusName) {
        return () -> RenderRequest.svg(Corpus.bytes(corpusName));
    }

    @Override
    public String toString() {
        return attackClass + "/" + name + " -> " + expected;
    }
}
