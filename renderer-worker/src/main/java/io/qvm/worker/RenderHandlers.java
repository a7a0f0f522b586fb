package io.qvm.worker;

import io.qvm.transport.ErrorCode;
import io.qvm.transport.ErrorReply;
import io.qvm.transport.Frame;
import io.qvm.transport.Limits;
import java.util.List;

/** The {@link RenderHandler} the worker runs with. */
final class RenderHandlers {

    private RenderHandlers() {
    }

    /** The production handler. */
    static RenderHandler standard(Log log) {
        return new RenderHandler() {
            @Override
            public List<String> capabilities() {
                return List.of();
            }

            @Override
            public void warmUp() {
            }

            @Override
            public Frame handle(Frame request, Limits limits) {
                return new ErrorReply(request.requestId(), ErrorCode.UNSUPPORTED, "rendering is not available yet")
                        .toFrame();
            }
        };
    }
}
