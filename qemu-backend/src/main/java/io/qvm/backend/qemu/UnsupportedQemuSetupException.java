package io.qvm.backend.qemu;

import io.qvm.SandboxException;

/**
 * The inputs describe a VM this QEMU cannot run: a hardware accelerator with a foreign guest,
 * vsock on a host without vhost, a QEMU older than qvm supports, a socket path too long for
 * {@code sun_path}. The message says which and what to change.
 */
public class UnsupportedQemuSetupException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public UnsupportedQemuSetupException(String message) {
        super(message);
    }
}
