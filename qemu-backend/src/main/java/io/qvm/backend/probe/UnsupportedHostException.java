package io.qvm.backend.probe;

import io.qvm.SandboxException;

/** The host is one qvm cannot run on (e.g. a CPU architecture other than x86_64 and aarch64). */
public class UnsupportedHostException extends SandboxException {
    private static final long serialVersionUID = 1L;

    public UnsupportedHostException(String message) {
        super(message);
    }
}
