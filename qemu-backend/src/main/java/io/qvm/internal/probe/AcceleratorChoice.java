package io.qvm.internal.probe;

import io.qvm.protocol.image.Arch;
import io.qvm.Accelerator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The accelerator {@link AcceleratorSelector} chose, with the evidence.
 *
 * @param accelerator    the concrete accelerator to run with (never AUTO)
 * @param guest          the guest architecture it was chosen for
 * @param verdicts       every layer verdict asked, in order (for {@code qvm doctor}-style output)
 * @param fellBack       true when the preferred accelerator failed and TCG was taken instead
 * @param fallbackReason why, when {@code fellBack} (the failing verdict, with its fix)
 */
public record AcceleratorChoice(Accelerator accelerator, Arch guest, List<LayerVerdict> verdicts, boolean fellBack,
        Optional<String> fallbackReason) {
    public AcceleratorChoice {
        Objects.requireNonNull(accelerator, "accelerator");
        Objects.requireNonNull(guest, "guest");
        verdicts = List.copyOf(verdicts);
        Objects.requireNonNull(fallbackReason, "fallbackReason");
        if (accelerator == Accelerator.AUTO) {
            throw new IllegalArgumentException("a choice is concrete, not AUTO");
        }
    }

    /** The loud line to show a user when the choice fell back, e.g. in the CLI. */
    public Optional<String> warning() {
        return fallbackReason.map(r -> "qvm: falling back to TCG (software emulation, roughly 10x slower): " + r);
    }
}
