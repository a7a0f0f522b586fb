package io.qvm;

/**
 * The request reached a {@link SandboxPool} that is closed (or was closed while the request
 * waited for a sandbox). Nothing was sent to a sandbox; the document is not at fault.
 *
 * <p>What a server does: it is shutting down, or used a pool after closing it (a bug in the
 * server's life cycle). Answer "unavailable" (HTTP 503) and route the request elsewhere; do not
 * retry on this pool.
 */
public final class PoolClosedException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public PoolClosedException() {
        super("the sandbox pool is closed: it takes no more requests; use an open pool (a server that is "
                + "shutting down should stop routing requests to it first)");
    }
}
