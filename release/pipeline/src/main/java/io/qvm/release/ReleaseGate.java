package io.qvm.release;

import java.util.function.Consumer;

/**
 * The gate of a release: what must hold on a real host for the staged images before anything is
 * published. {@link Release} runs it once, after staging and before {@code verify-staged}; a
 * result with any failed step, or without a passed {@code <arch>:boot} step for every staged
 * architecture, publishes nothing and the release names that step with its evidence. {@link HostGate} is the product's gate (boots the images); a gate never modifies the
 * staged files (the release re-verifies every one of them after it ran, against the SHA-256 it
 * kept at staging).
 */
public interface ReleaseGate {

    /** A short name for the report, e.g. {@code host}. */
    String name();

    /**
     * Proves {@code images} on this host.
     *
     * @param progress one line per step as it happens
     * @return every step it ran, in order, and per architecture what its boot showed; a step that
     *     failed ends the run of that architecture (and a gate may stop there)
     */
    GateResult run(StagedImages images, Consumer<String> progress);
}
