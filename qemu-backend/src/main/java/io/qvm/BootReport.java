package io.qvm;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * When each boot phase of a sandbox was reached, measured from the moment QEMU was started.
 *
 * <p>Host-side phases: {@code process-start} (0), {@code qmp-ready}, {@code transport-connected},
 * {@code worker-ready}. Guest phases come from the init's console markers
 * ({@code qvm: phase=<name> uptime=<s>}) and are reported as {@code guest:<name>} with the
 * guest's own uptime, which starts a little after the QEMU process does.
 *
 * <p>A clone restored from a template ({@link #template()} present) has the host-side phases
 * {@code process-start}, {@code transport-connected}, {@code qmp-ready}, {@code state-loaded}
 * (the template's state restored, VM paused), {@code resumed}, {@code clock-set} (the guest init
 * set the clock and saw the CRNG reseed, and the host stepped the clock to its own), {@code worker-ready} (a fresh HELLO answered) and
 * {@code status-checked}; no guest phases (the guest did not boot).
 *
 * @param accelerator the accelerator the sandbox runs on, e.g. {@code tcg}
 * @param phases ordered phase name → offset
 * @param template the id of the template this sandbox was restored from; empty after a cold boot
 */
public record BootReport(String accelerator, String machine, String transport, Map<String, Duration> phases,
        List<String> notes, Optional<String> template) {

    public BootReport {
        phases = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(phases));
        notes = List.copyOf(notes);
        java.util.Objects.requireNonNull(template, "template");
    }

    /** A cold boot's report. */
    public BootReport(String accelerator, String machine, String transport, Map<String, Duration> phases,
            List<String> notes) {
        this(accelerator, machine, transport, phases, notes, Optional.empty());
    }

    /** Whether this sandbox was restored from a template rather than booted. */
    public boolean restored() {
        return template.isPresent();
    }

    public Optional<Duration> phase(String name) {
        return Optional.ofNullable(phases.get(name));
    }

    /** Time from QEMU's start to the worker's READY. */
    public Duration total() {
        return phase("worker-ready").orElse(Duration.ZERO);
    }
}
