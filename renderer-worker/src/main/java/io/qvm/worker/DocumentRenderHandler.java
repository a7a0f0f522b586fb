package io.qvm.worker;

import io.qvm.protocol.Messages;
import io.qvm.protocol.ErrorCode;
import io.qvm.protocol.ErrorReply;
import io.qvm.protocol.Frame;
import io.qvm.protocol.Limits;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Objects;

/**
 * The worker's {@link RenderHandler}: decodes the RENDER header, runs {@link SvgRenderer} or
 * {@link PdfRenderer} under the {@link RenderWatchdog} with the session's {@link LimitChecker},
 * and turns the outcome into RENDER_RESULT or a typed ERROR. Logs one line per request (sizes,
 * codes, times — never document content).
 */
public final class DocumentRenderHandler implements RenderHandler {

    public static final String CAPABILITY_SVG = "render-svg";
    public static final String CAPABILITY_PDF = "render-pdf";

    /**
     * Limits for the warm-up renders. Their deadline is generous on purpose: the first render of a
     * JVM loads and links most of Batik or PDFBox, which under TCG and gVisor measured 29 s and more
     * (the host's boot deadline bounds the whole boot anyway). A warm-up cut short would leave a
     * render thread the watchdog cannot stop, and the worker would then exit as stuck on its first
     * real request.
     */
    private static final Limits WARM_UP_LIMITS = new Limits(1 << 20, 1 << 20, 1 << 20, 1024, 1, 600_000);

    private final SvgRenderer svg = new SvgRenderer();
    private final PdfRenderer pdf = new PdfRenderer();
    private final RenderWatchdog watchdog = new RenderWatchdog();
    private final Log log;

    public DocumentRenderHandler(Log log) {
        this.log = Objects.requireNonNull(log, "log");
    }

    @Override
    public List<String> capabilities() {
        return List.of(CAPABILITY_SVG, CAPABILITY_PDF);
    }

    @Override
    public boolean healthy() {
        return watchdog.healthy();
    }

    /** {@code -Dqvm.warmup=false} skips the warm-up (measurements only). */
    public static final String WARM_UP_PROPERTY = "qvm.warmup";

    /** Whether {@value #WARM_UP_PROPERTY} is {@code false}: this JVM skips every warm-up. */
    static boolean warmUpSkipped() {
        return "false".equals(System.getProperty(WARM_UP_PROPERTY));
    }

    @Override
    public void warmUp() {
        if (warmUpSkipped()) {
            log.info("warm-up skipped (" + WARM_UP_PROPERTY + "=false)");
            return;
        }
        warmUp("warmup.svg", RenderRequest.Type.SVG);
        warmUp("warmup.pdf", RenderRequest.Type.PDF);
    }

    private void warmUp(String resource, RenderRequest.Type type) {
        byte[] doc;
        try (InputStream in = DocumentRenderHandler.class.getResourceAsStream(resource)) {
            if (in == null) {
                log.info("warm-up " + resource + " missing from the jar");
                return;
            }
            doc = in.readAllBytes();
        } catch (IOException e) {
            log.info("warm-up " + resource + " unreadable");
            return;
        }
        RenderRequest r = new RenderRequest(type, doc, 0, 0, 0, 1, RenderRequest.WHITE);
        try {
            render(r, new LimitChecker(WARM_UP_LIMITS));
        } catch (RenderException e) {
            log.info("warm-up " + resource + " failed: " + e.code() + " " + e.getMessage());
        }
    }

    @Override
    public Frame handle(Frame request, Limits limits) {
        long t0 = System.nanoTime();
        RenderRequest r;
        try {
            r = Messages.renderRequest(request);
        } catch (IllegalArgumentException e) {
            log.info("request " + request.requestId() + " BAD_REQUEST: " + e.getMessage());
            return Messages.toFrame(new ErrorReply(request.requestId(), ErrorCode.BAD_REQUEST, e.getMessage()));
        }
        try {
            Rendered out = render(r, new LimitChecker(limits));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            log.info("request " + request.requestId() + " " + r.type().wireName() + " " + r.document().length
                    + " B -> " + out.width() + "x" + out.height() + " png " + out.png().length + " B in " + ms + " ms");
            return Messages.toFrame(new RenderResult(out.png(), out.width(), out.height(), ms), request.requestId());
        } catch (RenderException e) {
            long ms = (System.nanoTime() - t0) / 1_000_000;
            log.info("request " + request.requestId() + " " + r.type().wireName() + " " + r.document().length
                    + " B -> " + e.code() + " in " + ms + " ms: " + e.getMessage());
            return Messages.toFrame(new ErrorReply(request.requestId(), e.code(), e.getMessage()));
        }
    }

    /** Renders one request on the watchdog's thread, within the session's time budget. */
    Rendered render(RenderRequest r, LimitChecker limits) throws RenderException {
        long budget = RenderWatchdog.budgetMillis(limits.limits().requestTimeoutMillis());
        return watchdog.run(cancel -> r.type() == RenderRequest.Type.SVG
                ? svg.render(r, limits, cancel)
                : pdf.render(r, limits, cancel), budget);
    }
}
