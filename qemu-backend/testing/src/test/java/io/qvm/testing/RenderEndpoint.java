package io.qvm.testing;

import io.qvm.BootFailedException;
import io.qvm.HostSetupException;
import io.qvm.PoolClosedException;
import io.qvm.PoolTimeoutException;
import io.qvm.RenderFailedException;
import io.qvm.SandboxLostException;
import io.qvm.SandboxPool;
import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A server's render endpoint, exactly as the README's example shows it (the part between the
 * markers is checked against the README by {@link ReadmeExampleTest}): every typed error qvm
 * throws becomes one answer.
 */
final class RenderEndpoint {

    /** What the server answers its own caller: an HTTP status, a reason, the PNG on success. */
    record Answer(int status, String reason, byte[] png, int retryAfterSeconds) {
        static Answer png(RenderResult r) {
            return new Answer(200, "ok", r.png(), 0);
        }

        static Answer error(int status, String reason) {
            return new Answer(status, reason, null, 0);
        }

        static Answer retryLater(int seconds, String reason) {
            return new Answer(503, reason, null, seconds);
        }
    }

    private final SandboxPool pool;
    final List<String> securityLog = new CopyOnWriteArrayList<>();
    final List<String> alerts = new CopyOnWriteArrayList<>();

    RenderEndpoint(SandboxPool pool) {
        this.pool = pool;
    }

    // README:begin
    Answer render(byte[] untrustedBytes) {
        try {
            RenderResult png = pool.render(RenderRequest.svg(untrustedBytes).withSize(800, 600));
            return Answer.png(png);
        } catch (RenderFailedException e) {   // the document's fault; e.code(): BAD_REQUEST, TOO_LARGE, LIMIT_EXCEEDED,
            // PARSE_ERROR, UNSUPPORTED, TIMEOUT (the worker stopped it), INTERNAL. Tell the uploader; do not retry.
            return Answer.error(422, e.code().name());
        } catch (SandboxLostException e) {    // the sandbox died, overran the request deadline or broke the
            // protocol (e.reason()) and was stopped; the pool already retried a plain crash once.
            if (e.reason() == SandboxLostException.Reason.PROTOCOL_VIOLATION) {
                securityLog.add("worker broke the protocol: " + e.getMessage()); // its document took it over
            }
            boolean documentsFault = e.outOfMemory() || e.reason() != SandboxLostException.Reason.CRASHED;
            return Answer.error(documentsFault ? 422 : 502, e.reason().name());
        } catch (PoolTimeoutException e) {    // every sandbox stayed busy for the acquire timeout: nothing was sent
            return Answer.retryLater(5, "busy");
        } catch (PoolClosedException e) {     // the pool is closed (shutting down): route the request elsewhere
            return Answer.retryLater(0, "shutting down");
        } catch (BootFailedException e) {     // no sandbox reached READY (console tail in the message): try later
            return Answer.retryLater(30, "no sandbox");
        } catch (HostSetupException e) {      // this host cannot run sandboxes as configured (e.problem():
            // QEMU_NOT_FOUND, ACCELERATOR_UNAVAILABLE, IMAGE_INVALID, ...): report it unfit; the message says the fix.
            alerts.add(e.problem() + ": " + e.getMessage());
            return Answer.error(500, e.problem().name());
        }
    }
    // README:end
}
