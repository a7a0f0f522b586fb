package io.qvm.transport.netty;

import io.qvm.transport.Limits;

/** Test constants shared with other test packages. */
public final class SandboxTransportAccess {
    public static final Limits LIMITS = SandboxTransportTest.LIMITS;

    private SandboxTransportAccess() {
    }
}
