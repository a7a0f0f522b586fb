package io.qvm.cli;

import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.cli.control.ControlTarget;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import javax.imageio.ImageIO;

/** A {@link ControlTarget} with scripted answers: each queued function answers one render; echo echoes. */
final class FakeTargets {

    private FakeTargets() {
    }

    /** A real PNG of {@code w} × {@code h}. */
    static byte[] png(int w, int h) {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ImageIO.write(new BufferedImage(w, h, BufferedImage.TYPE_INT_ARGB), "png", out);
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static final class Scripted implements ControlTarget {
        final ConcurrentLinkedQueue<Function<RenderRequest, RenderResult>> renders = new ConcurrentLinkedQueue<>();
        final List<RenderRequest> received = new CopyOnWriteArrayList<>();
        final AtomicInteger stops = new AtomicInteger();
        Runnable onStop = () -> { };

        Scripted then(Function<RenderRequest, RenderResult> answer) {
            renders.add(answer);
            return this;
        }

        @Override
        public byte[] echo(byte[] payload) {
            return payload.clone();
        }

        @Override
        public ControlTarget.Rendered render(RenderRequest request) {
            received.add(request);
            Function<RenderRequest, RenderResult> f = renders.poll();
            if (f == null) {
                int w = request.width() == 0 ? 10 : request.width();
                int h = request.height() == 0 ? 10 : request.height();
                return new ControlTarget.Rendered(new RenderResult(png(w, h), w, h, 7), null);
            }
            return new ControlTarget.Rendered(f.apply(request), null);
        }

        @Override
        public void stop() {
            if (stops.getAndIncrement() == 0) {
                onStop.run();
            }
        }
    }
}
