package io.qvm.release;

import java.util.Objects;

/**
 * One step of a release as the report records it: its name (e.g. {@code build:x86_64},
 * {@code gate:aarch64:render-pdf}, {@code verify-staged}), whether it passed, how long it took and
 * its evidence — what it saw, in a sentence or a few lines (hashes, sizes, the boot's phases, the
 * error and the console tail of a boot that failed).
 *
 * @param name the step's name, stable across releases (docs/CONTRACTS.md, "Release")
 * @param ok whether it passed
 * @param millis its wall time
 * @param evidence what it found; never null, never blank
 */
public record ReleaseStep(String name, boolean ok, long millis, String evidence) {

    public ReleaseStep {
        Objects.requireNonNull(name, "name");
        if (evidence == null || evidence.isBlank()) {
            throw new IllegalArgumentException("step " + name + " needs its evidence");
        }
        if (millis < 0) {
            throw new IllegalArgumentException("step " + name + ": negative duration " + millis);
        }
    }

    public static ReleaseStep passed(String name, long millis, String evidence) {
        return new ReleaseStep(name, true, millis, evidence);
    }

    public static ReleaseStep failed(String name, long millis, String evidence) {
        return new ReleaseStep(name, false, millis, evidence);
    }
}
