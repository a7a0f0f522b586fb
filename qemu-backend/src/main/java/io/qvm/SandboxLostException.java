package io.qvm;

import java.util.Objects;
import java.util.Optional;

/**
 * The sandbox was lost in the middle of a request: its VM or worker ended ({@link Reason#CRASHED}),
 * the request overran the configured request deadline and the host stopped the sandbox
 * ({@link Reason#DEADLINE_EXCEEDED}), or the guest broke its contract — the worker answered with
 * something the protocol forbids, or the guest wrote past the cap of its console or events file —
 * and the host stopped the sandbox ({@link Reason#PROTOCOL_VIOLATION}). The sandbox is closed and
 * cannot be reused; the evidence (console and QEMU stderr tails, the worker's exit status) comes
 * with the exception.
 *
 * <p>What a server does differently: the document may or may not be at fault. Retrying it once
 * on a fresh sandbox is reasonable (a {@link SandboxPool} does that for a crash), except when
 * {@link #outOfMemory()} says the document exhausted the worker's heap, the deadline passed, or
 * the guest broke the contract: the same document will do it again. A protocol violation is
 * also worth a security log entry: a guest that lies or floods was most likely taken over by the
 * document.
 */
public class SandboxLostException extends SandboxException {
    private static final long serialVersionUID = 1L;

    /** The worker's exit status on {@link OutOfMemoryError} (renderer-worker's {@code FatalErrors}). */
    public static final int OUT_OF_MEMORY_STATUS = 3;

    /** How the sandbox was lost. */
    public enum Reason {
        /** QEMU exited or the worker ended while the request was in flight. */
        CRASHED,
        /** The request overran the request deadline; the host stopped the sandbox. */
        DEADLINE_EXCEEDED,
        /**
         * The guest broke its contract with the host, so it is not to be trusted (the document may
         * have compromised it); the host stopped the sandbox and handed nothing of the answer on.
         * Not retried by a pool. Either the worker's answer broke the protocol — a PNG that is not
         * what its header says or above the limits, a malformed or mismatched reply, a frame it
         * began and never finished — or the guest wrote past the cap of its console or of the
         * init's events file, which only a guest whose init or kernel was taken over can (the
         * message says which).
         */
        PROTOCOL_VIOLATION
    }

    private final Reason reason;
    private final Integer workerExitStatus;

    public SandboxLostException(Reason reason, String message) {
        this(reason, message, null, null, null, null);
    }

    public SandboxLostException(Reason reason, String message, Throwable cause) {
        this(reason, message, cause, null, null, null);
    }

    /** @param workerExitStatus the worker's exit status as the guest init reported it, or null */
    public SandboxLostException(Reason reason, String message, Throwable cause, String consoleTail,
            String stderrTail, Integer workerExitStatus) {
        super(message, cause, consoleTail, stderrTail);
        this.reason = Objects.requireNonNull(reason, "reason");
        this.workerExitStatus = workerExitStatus;
    }

    public Reason reason() {
        return reason;
    }

    /** The worker's exit status, when the guest init reported one before the VM ended. */
    public Optional<Integer> workerExitStatus() {
        return Optional.ofNullable(workerExitStatus);
    }

    /**
     * Whether the worker died of running out of memory (exit status {@value #OUT_OF_MEMORY_STATUS}):
     * the same document would do it again, so a pool does not retry it.
     */
    public boolean outOfMemory() {
        return workerExitStatus != null && workerExitStatus == OUT_OF_MEMORY_STATUS;
    }
}
