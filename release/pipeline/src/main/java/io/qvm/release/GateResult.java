package io.qvm.release;

import io.qvm.protocol.image.Arch;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What a {@link ReleaseGate} found: its steps (named {@code <arch>:<step>}, e.g.
 * {@code x86_64:boot}, {@code aarch64:render-pdf}) and, per architecture it booted, the boot's
 * evidence.
 *
 * @param gate the gate's name
 * @param steps every step, in the order it ran
 * @param boots per architecture, what its (first, cold) boot showed; absent for one that never booted
 */
public record GateResult(String gate, List<ReleaseStep> steps, List<Boot> boots) {

    public GateResult {
        Objects.requireNonNull(gate, "gate");
        steps = List.copyOf(steps);
        boots = List.copyOf(boots);
        if (steps.isEmpty()) {
            throw new IllegalArgumentException("a gate that ran no step proves nothing");
        }
    }

    /** Whether every step passed. */
    public boolean ok() {
        return steps.stream().allMatch(ReleaseStep::ok);
    }

    /** The first step that failed. */
    public Optional<ReleaseStep> firstFailure() {
        return steps.stream().filter(s -> !s.ok()).findFirst();
    }

    /** The boot evidence of {@code arch}, if it booted. */
    public Optional<Boot> boot(Arch arch) {
        return boots.stream().filter(b -> b.arch() == arch).findFirst();
    }

    /**
     * One architecture's boot.
     *
     * @param arch the guest architecture
     * @param accelerator what it ran on ({@code kvm}, {@code tcg}, …)
     * @param machine the QEMU machine
     * @param phases each phase in order: host phases in ms since QEMU started, guest phases
     *     ({@code guest:<name>}) in ms of the guest's uptime
     * @param readyMillis ms from QEMU's start to the worker's READY
     */
    public record Boot(Arch arch, String accelerator, String machine, List<Phase> phases, long readyMillis) {
        public Boot {
            Objects.requireNonNull(arch, "arch");
            phases = List.copyOf(phases);
        }
    }

    /** A boot phase and when it was reached. */
    public record Phase(String name, long millis) {
    }
}
