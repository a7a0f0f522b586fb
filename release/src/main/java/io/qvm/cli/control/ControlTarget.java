package io.qvm.cli.control;

import io.qvm.RenderFailedException;
import io.qvm.SandboxLostException;
import io.qvm.Sandbox;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.util.Objects;

/**
 * What a {@link ControlServer} relays requests to: normally a running {@link Sandbox}
 * ({@link #of}); in tests anything that speaks the same typed API.
 *
 * <p>Failures are the {@link Sandbox} API's: {@code RenderFailedException} (a subclass per worker
 * error code), {@code SandboxLostException}, {@code SandboxLostException}, any other
 * {@code SandboxException}.
 */
public interface ControlTarget {

    byte[] echo(byte[] payload);

    RenderResult render(RenderRequest request);

    /** Stops what serves the requests (for a sandbox: the graceful stop ladder). Idempotent. */
    void stop();

    /** A target relaying to {@code sandbox}; {@link #stop()} closes it. */
    static ControlTarget of(Sandbox sandbox) {
        Objects.requireNonNull(sandbox, "sandbox");
        return new ControlTarget() {
            @Override
            public byte[] echo(byte[] payload) {
                return sandbox.echo(payload);
            }

            @Override
            public RenderResult render(RenderRequest request) {
                return sandbox.render(request);
            }

            @Override
            public void stop() {
                sandbox.close();
            }
        };
    }
}
