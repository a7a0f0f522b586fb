package io.qvm.cli.control;

import io.qvm.Sandbox;
import io.qvm.SandboxPool;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What a {@link ControlServer} relays requests to: one running {@link Sandbox} that serves every
 * document ({@link #reused}), a pool that gives every document a never-used sandbox
 * ({@link #freshPerRender}); in tests anything that speaks the same typed API.
 *
 * <p>Failures are the {@link Sandbox} API's: {@code RenderFailedException} (a subclass per worker
 * error code), {@code SandboxLostException}, any other {@code SandboxException}.
 */
public interface ControlTarget {

    /** {@link ServedBy#mode()} of a sandbox that served no document before this one and is stopped after it. */
    String FRESH_PER_RENDER = "fresh-per-render";
    /** {@link ServedBy#mode()} of a sandbox that serves every document of its {@code qvm up}. */
    String REUSED = "reused";

    byte[] echo(byte[] payload);

    Rendered render(RenderRequest request);

    /** Stops what serves the requests (for a sandbox: the graceful stop ladder). Idempotent. */
    void stop();

    /** A render's result and, when the target knows, which sandbox produced it. */
    record Rendered(RenderResult result, ServedBy servedBy) {
        public Rendered {
            Objects.requireNonNull(result, "result");
        }
    }

    /**
     * Which sandbox served a render, as the supervisor tells the {@code qvm render} that asked.
     *
     * @param sandbox the sandbox's id
     * @param mode {@link #FRESH_PER_RENDER} or {@link #REUSED}
     * @param earlierDocuments documents this sandbox rendered for callers before this one (0 for a
     *     fresh one; the canned warm-up renders of qvm's own documents do not count)
     * @param restored whether the sandbox was restored from a template (false: it cold-booted)
     */
    record ServedBy(String sandbox, String mode, long earlierDocuments, boolean restored) {
        public ServedBy {
            Objects.requireNonNull(sandbox, "sandbox");
            Objects.requireNonNull(mode, "mode");
        }

        /** Whether no other document had been rendered in this sandbox. */
        public boolean fresh() {
            return earlierDocuments == 0;
        }
    }

    /** A target relaying every request to {@code sandbox}; {@link #stop()} closes it. */
    static ControlTarget reused(Sandbox sandbox) {
        Objects.requireNonNull(sandbox, "sandbox");
        AtomicLong documents = new AtomicLong();
        return new ControlTarget() {
            @Override
            public byte[] echo(byte[] payload) {
                return sandbox.echo(payload);
            }

            @Override
            public Rendered render(RenderRequest request) {
                long before = documents.getAndIncrement(); // a refused document was seen by the worker too
                return new Rendered(sandbox.render(request),
                        new ServedBy(sandbox.id(), REUSED, before, sandbox.bootReport().restored()));
            }

            @Override
            public void stop() {
                sandbox.close();
            }
        };
    }

    /**
     * A target that renders each document in a sandbox of {@code pool} that has rendered no
     * caller's document before and is closed after this one ({@link SandboxPool.Recycle#perRequest()}
     * pool). A render whose sandbox died is not retried: the caller sees the failure.
     * {@link #stop()} closes the pool, then runs {@code afterStop}.
     */
    static ControlTarget freshPerRender(SandboxPool pool, Runnable afterStop) {
        Objects.requireNonNull(pool, "pool");
        Objects.requireNonNull(afterStop, "afterStop");
        return new ControlTarget() {
            @Override
            public byte[] echo(byte[] payload) {
                return pool.echo(payload);
            }

            @Override
            public Rendered render(RenderRequest request) {
                return pool.withSandbox(s -> new Rendered(s.render(request),
                        new ServedBy(s.id(), FRESH_PER_RENDER, 0, s.bootReport().restored())));
            }

            @Override
            public void stop() {
                try {
                    pool.close();
                } finally {
                    afterStop.run();
                }
            }
        };
    }
}
