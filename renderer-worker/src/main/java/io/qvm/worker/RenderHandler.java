package io.qvm.worker;

import io.qvm.protocol.Frame;
import io.qvm.protocol.Limits;
import java.util.List;

/**
 * Turns one {@code RENDER} frame into its answer: a {@code RENDER_RESULT} frame or a typed
 * {@code ERROR} frame with the same request id. Never throws for anything the document does; the
 * only thing that escapes is {@link OutOfMemoryError} (the worker halts on it).
 */
public interface RenderHandler {

    /** What READY advertises besides {@code echo}, e.g. {@code render-svg}, {@code render-pdf}. */
    List<String> capabilities();

    /** Renders tiny built-in documents once so the first real request does not pay for class loading. */
    void warmUp();

    /**
     * False once the handler can no longer be trusted with another request (a render that could
     * not be stopped is still running); the loop then exits with {@link RenderWatchdog#STUCK_STATUS}.
     */
    default boolean healthy() {
        return true;
    }

    /** Answers {@code request} under the session's {@code limits}. */
    Frame handle(Frame request, Limits limits);
}
