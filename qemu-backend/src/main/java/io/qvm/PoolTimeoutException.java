package io.qvm;

import java.time.Duration;

/**
 * A {@link SandboxPool} had no sandbox for a request within its
 * {@link SandboxPool.Builder#acquireTimeout acquire timeout}: every one of its
 * {@link SandboxPool.Builder#maxSandboxes sandboxes} was busy the whole time. Nothing was sent to
 * a sandbox, so the document is not at fault and the request may be retried as it is.
 *
 * <p>What a server does: answer "busy, try again later" (HTTP 503 with a {@code Retry-After});
 * if it happens under normal load, raise {@code maxSandboxes} (each costs a VM's memory) or
 * {@code acquireTimeout}, or lower the request deadline so that busy sandboxes come free sooner.
 */
public final class PoolTimeoutException extends SandboxException {
    private static final long serialVersionUID = 1L;

    private final Duration acquireTimeout;
    private final int maxSandboxes;

    public PoolTimeoutException(Duration acquireTimeout, int maxSandboxes) {
        super("no sandbox of the pool became free within " + acquireTimeout.toMillis() + " ms (all "
                + maxSandboxes + " busy); retry later, or raise maxSandboxes or acquireTimeout, or lower "
                + "the request deadline");
        this.acquireTimeout = acquireTimeout;
        this.maxSandboxes = maxSandboxes;
    }

    /** How long the request waited. */
    public Duration acquireTimeout() {
        return acquireTimeout;
    }

    /** How many sandboxes the pool may run at once; all were busy. */
    public int maxSandboxes() {
        return maxSandboxes;
    }
}
