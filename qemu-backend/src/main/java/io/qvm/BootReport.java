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
 * @param accelerator the accelerator the sandbox runs on, e.g. {@code tcg}
 * @param phases ordered phase name → offset
 */
public record BootReport(String accelerator, String machine, String transport, Map<String, Duration> phases,
        List<String> notes) {

    public BootReport {
        phases = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(phases));
        notes = List.copyOf(notes);
    }

    public Optional<Duration> phase(String name) {
        return Optional.ofNullable(phases.get(name));
    }

    /** Time from QEMU's start to the worker's READY. */
    public Duration total() {
        return phase("worker-ready").orElse(Duration.ZERO);
    }
}
