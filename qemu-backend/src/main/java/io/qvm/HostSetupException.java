package io.qvm;

/**
 * This host cannot run a sandbox as configured, and trying again will not change that: QEMU is
 * missing or too old for what was asked, the requested accelerator or transport is not usable,
 * the guest image is missing or does not match its checksums, a set-up step (a user for QEMU, a
 * private directory) is missing, or qvm does not run on this OS or CPU at all. {@link #problem()} says which; the message names what was found and the fix.
 *
 * <p>What a server does differently: nothing per request — it reports the host as unfit (to its
 * operator, a health check) and stops asking for sandboxes until someone has acted on the message.
 */
public class HostSetupException extends SandboxException {
    private static final long serialVersionUID = 1L;

    /** What part of the host is not fit. */
    public enum Problem {
        /** No {@code qemu-system-<arch>} binary found ({@code $QVM_QEMU}, PATH, the usual places). */
        QEMU_NOT_FOUND,
        /** This QEMU cannot do what the configuration asks (a machine, device or option it lacks). */
        QEMU_UNSUPPORTED,
        /** The accelerator asked for explicitly is not compiled in, not usable, or fails its probe. */
        ACCELERATOR_UNAVAILABLE,
        /** The transport asked for explicitly (vsock) is not available on this host. */
        TRANSPORT_UNAVAILABLE,
        /** The guest image is missing, incomplete, or a file does not match its checksum. */
        IMAGE_INVALID,
        /** The host's OS or CPU architecture is not one qvm runs on. */
        HOST_UNSUPPORTED,
        /**
         * A set-up step qvm will not take by itself is missing: an unprivileged user for QEMU when
         * qvm runs as root, a private directory where a shared or foreign one exists. The message
         * gives the command that fixes it.
         */
        HOST_SETUP_NEEDED
    }

    private final Problem problem;

    public HostSetupException(Problem problem, String message) {
        this(problem, message, null);
    }

    public HostSetupException(Problem problem, String message, Throwable cause) {
        super(message, cause);
        this.problem = java.util.Objects.requireNonNull(problem, "problem");
    }

    /** Which part of the host is not fit. */
    public Problem problem() {
        return problem;
    }
}
