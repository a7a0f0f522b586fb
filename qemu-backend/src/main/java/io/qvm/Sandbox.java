package io.qvm;

import io.qvm.protocol.RenderRequest;
import io.qvm.protocol.RenderResult;
import io.qvm.protocol.WorkerStatus;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

/**
 * One running sandbox: a QEMU virtual machine with no network device whose guest runs the
 * renderer worker under gVisor. Obtained from {@link SandboxBackend#start}; close it to stop the
 * VM (graceful first, then QMP {@code quit}, then signals) and remove its state.
 *
 * <p>Requests are served one at a time (callers from several threads are serialised). Every
 * request has the config's request deadline: a request that overruns it stops this sandbox and
 * throws {@link SandboxLostException}; start a fresh sandbox for the next request.
 */
public interface Sandbox extends AutoCloseable {

    /** A short random id, also the name of its state directory. */
    String id();

    SandboxConfig config();

    /** When each boot phase was reached. */
    BootReport bootReport();

    /**
     * Sends {@code payload} through the worker and returns what came back (a transport check).
     *
     * @throws RenderFailedException above {@link SandboxConfig#maxRequestBytes()}
     * @throws SandboxLostException the worker did not answer within the request deadline
     * @throws SandboxLostException the sandbox died
     */
    byte[] echo(byte[] payload);

    /**
     * Renders an untrusted document.
     *
     * @throws RenderFailedException (a subclass per error code) the worker refused or failed it;
     *     the sandbox stays usable
     * @throws SandboxLostException the render overran the request deadline; the sandbox was stopped
     * @throws SandboxLostException the sandbox died (e.g. the worker ran out of memory)
     */
    RenderResult render(RenderRequest request);

    /**
     * Asks the worker about itself: its wall clock, a few fresh bytes of its {@code /dev/urandom}
     * and how many requests it served — nothing of any document. After a restore from a template
     * this shows that the clone's randomness is its own, and — once gVisor took up the clock the
     * guest init set, about a second after the restore (or after a resume from an idle pause) —
     * the host's time; in that window it may show the template's (or the pause's) time.
     *
     * @throws SandboxLostException no answer within the request deadline; the sandbox was stopped
     * @throws SandboxLostException the sandbox died
     */
    WorkerStatus status();

    /** Whether QEMU still runs and the transport is up. */
    boolean isAlive();

    /** Completes when QEMU has exited (for any reason) and this sandbox is closed. */
    CompletableFuture<Void> onExit();

    /** The guest console (the init's phase markers, the worker's stderr). */
    Path consoleLog();

    /** QEMU's stderr. */
    Path stderrLog();

    /** The sandbox's state directory. */
    Path stateDir();

    /** Stops the VM and removes its state. Idempotent. */
    @Override
    void close();
}
