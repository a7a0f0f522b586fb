package io.qvm.cli;

import io.qvm.cli.control.ReadyFile;
import java.io.PrintWriter;
import java.util.List;
import java.util.Map;

/**
 * {@code qvm up} — schema {@code qvm.up/1}.
 *
 * @param detached true for {@code --detach} (text output is then the id alone)
 * @param bootMillis boot phase → milliseconds since QEMU started, in order
 * @param totalMillis QEMU start → worker READY
 */
public record UpReport(String schema, String id, boolean detached, long supervisorPid, Long qemuPid,
        String accelerator, String machine, String transport, Map<String, Long> bootMillis, long totalMillis,
        String controlSocket, String stateDir, List<String> notes) implements Report {

    static UpReport of(ReadyFile r, String stateDir) {
        long total = r.bootMillis().getOrDefault("worker-ready", 0L);
        return new UpReport("qvm.up/1", r.id(), r.detached(), r.supervisorPid(), r.qemuPid(), r.accelerator(),
                r.machine(), r.transport(), r.bootMillis(), total, r.controlSocket(), stateDir, r.notes());
    }

    @Override
    public void printText(PrintWriter out) {
        if (detached) {
            out.println(id);
            return;
        }
        out.printf("sandbox %s is ready: %s, %s, %s transport, %.1f s to READY%n", id, accelerator, machine, transport,
                totalMillis / 1000.0);
        out.println("  boot phases (ms since QEMU started):");
        bootMillis.forEach((k, v) -> out.printf("    %-22s %7d%n", k, v));
        notes.forEach(n -> out.println("  note: " + n));
        out.println("  control socket: " + controlSocket);
        out.println("  render with: qvm render FILE --id " + id + "   stop with: Ctrl-C or qvm down " + id);
    }
}
