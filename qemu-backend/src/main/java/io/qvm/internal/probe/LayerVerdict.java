package io.qvm.internal.probe;

import io.qvm.Accelerator;
import java.util.Objects;

/**
 * One layer's answer for one accelerator.
 *
 * @param accelerator the accelerator asked about (never AUTO)
 * @param layer       which question
 * @param passed      the answer
 * @param reason      the evidence in one line, e.g. {@code "/dev/kvm is not writable by uid 1000"}
 * @param fix         what a person can do about a failure ("" when passed or nothing helps)
 * @param cached      true when the answer came from the probe cache rather than a fresh run
 */
public record LayerVerdict(Accelerator accelerator, Layer layer, boolean passed, String reason, String fix,
        boolean cached) {
    public LayerVerdict {
        Objects.requireNonNull(accelerator, "accelerator");
        Objects.requireNonNull(layer, "layer");
        reason = reason == null ? "" : reason;
        fix = fix == null ? "" : fix;
    }

    /** A passing verdict. */
    public static LayerVerdict pass(Accelerator a, Layer layer, String reason) {
        return new LayerVerdict(a, layer, true, reason, "", false);
    }

    /** A failing verdict with the fix to suggest. */
    public static LayerVerdict fail(Accelerator a, Layer layer, String reason, String fix) {
        return new LayerVerdict(a, layer, false, reason, fix, false);
    }

    /** The same verdict marked as read from the cache. */
    public LayerVerdict asCached() {
        return new LayerVerdict(accelerator, layer, passed, reason, fix, true);
    }

    /** {@code "kvm functional: FAIL (…) — fix: …"}. */
    @Override
    public String toString() {
        return accelerator.qemuName() + " " + layer.label() + ": " + (passed ? "ok" : "FAIL") + " (" + reason + ")"
                + (cached ? " [cached]" : "") + (fix.isEmpty() ? "" : " — fix: " + fix);
    }
}
