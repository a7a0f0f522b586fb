package io.qvm.transport.netty;

import io.qvm.protocol.Limits;

/** Test constants shared with other test packages. */
public final class SandboxTransportAccess {
    public static final Limits LIMITS = SandboxTransportTest.LIMITS;

    private SandboxTransportAccess() {
    }
}
