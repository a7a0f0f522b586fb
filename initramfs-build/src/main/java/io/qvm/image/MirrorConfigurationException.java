package io.qvm.image;

/**
 * No usable Debian mirror: neither {@code QVM_DEBIAN_MIRROR} / {@code QVM_DEBIAN_SECURITY_MIRROR}
 * is set nor does the host have apt sources to borrow one from (macOS, Windows, Fedora, Arch), or
 * a configured one is not an http, https or file URL. qvm names no mirror host itself: set the
 * variables to a Debian mirror you trust (the lock's SHA-256 pins decide what is accepted, so
 * the mirror needs no trust for integrity, only for availability).
 */
public final class MirrorConfigurationException extends ImageException {
    private static final long serialVersionUID = 1L;

    public MirrorConfigurationException(String message) {
        super(message);
    }
}
