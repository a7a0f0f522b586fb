package io.qvm.cli;

import io.qvm.cli.control.ControlTarget;
import io.qvm.cli.control.ReadyFile;
import java.io.PrintWriter;
import java.util.List;
import java.util.Map;

/**
 * {@code qvm up} — schema {@code qvm.up/1}.
 *
 * @param detached true for {@code --detach} (text output is then the id alone)
 * @param bootMillis boot phase → milliseconds since QEMU started, in order (the first sandbox's)
 * @param totalMillis QEMU start → worker READY
 * @param mode {@code fresh-per-render} (every render gets a sandbox of its own) or {@code reused}
 * @param freshSandboxes {@code restored} or {@code cold-booted} for fresh-per-render; else null
 * @param idleTimeoutSeconds null when off
 * @param maxLifetimeSeconds null when off
 */
public record UpReport(String schema, String id, boolean detached, long supervisorPid, Long qemuPid,
        String accelerator, String machine, String transport, Map<String, Long> bootMillis, long totalMillis,
        String controlSocket, String stateDir, List<String> notes, String mode, String freshSandboxes,
        Long idleTimeoutSeconds, Long maxLifetimeSeconds) implements Report {

    static UpReport of(ReadyFile r, String stateDir) {
        long total = r.bootMillis().getOrDefault("worker-ready", 0L);
        return new UpReport("qvm.up/1", r.id(), r.detached(), r.supervisorPid(), r.qemuPid(), r.accelerator(),
                r.machine(), r.transport(), r.bootMillis(), total, r.controlSocket(), stateDir, r.notes(),
                r.mode() == null ? ControlTarget.REUSED : r.mode(), r.freshSandboxes(), r.idleTimeoutSeconds(),
                r.maxLifetimeSeconds());
    }

    /** The mode in a few words, as {@code qvm up}, its status line and {@code qvm ps} say it. */
    static String modeText(String mode, String freshSandboxes) {
        if (ControlTarget.FRESH_PER_RENDER.equals(mode)) {
            return "cold-booted".equals(freshSandboxes) ? "fresh sandbox per render, cold-booted"
                    : "fresh clone per render";
        }
        return "reused sandbox";
    }

    @Override
    public void printText(PrintWriter out) {
        if (detached) {
            out.println(id);
            return;
        }
        boolean fresh = ControlTarget.FRESH_PER_RENDER.equals(mode);
        out.printf("%s %s is ready: %s, %s, %s transport, %.1f s to READY%n", fresh ? "session" : "sandbox", id,
                accelerator, machine, transport, totalMillis / 1000.0);
        if (fresh) {
            out.println("  mode: " + modeText(mode, freshSandboxes) + " — every qvm render gets a sandbox no other "
                    + "document has touched, stopped after it (one is kept "
                    + ("cold-booted".equals(freshSandboxes) ? "booted" : "restored") + " ahead); --reuse shares one");
        } else {
            out.println("  mode: reused sandbox (--reuse) — every document goes to this one worker, which keeps "
                    + "whatever earlier documents did to it");
        }
        out.println("  ends: " + (idleTimeoutSeconds == null ? "no idle timeout" : "after " + limit(idleTimeoutSeconds)
                + " without a request (--idle-timeout)") + ", " + (maxLifetimeSeconds == null ? "no maximum lifetime"
                : "at the latest " + limit(maxLifetimeSeconds) + " after it started (--max-lifetime)"));
        out.println("  boot phases (ms since QEMU started" + (fresh ? ", first sandbox" : "") + "):");
        bootMillis.forEach((k, v) -> out.printf("    %-22s %7d%n", k, v));
        notes.forEach(n -> out.println("  note: " + n));
        out.println("  control socket: " + controlSocket);
        out.println("  render with: qvm render FILE --id " + id + "   stop with: Ctrl-C or qvm down " + id);
    }

    private static String limit(Long seconds) {
        return SessionLimit.format(java.time.Duration.ofSeconds(seconds));
    }
}
