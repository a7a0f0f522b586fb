package io.qvm.cli;

import io.qvm.admin.SandboxStates;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code qvm ps}: the sandboxes of this state directory. */
@Command(name = "ps", description = "List sandboxes and qvm up sessions: id, state, QEMU pid, accelerator, mode, uptime, owner.",
        footer = {"", "States: running (a qvm up session, reachable), pooled (a sandbox of a fresh-per-render session),",
            "booting, unmanaged (a library user's), exiting, stale (owner gone), unreadable.",
            "Mode of a session: fresh (a fresh sandbox per render) or reused (qvm up --reuse: one for every document).",
            "", "JSON (--json), schema qvm.ps/1:",
            "  {\"schema\":\"qvm.ps/1\", \"stateDir\", \"sandboxes\":[{\"id\", \"state\", \"qemuPid\", \"accelerator\",",
            "   \"uptimeSeconds\", \"owner\":{\"pid\", \"alive\", \"kind\"}, \"controlSocket\", \"stateDir\",",
            "   \"mode\":\"fresh-per-render|reused|null\", \"session\":\"the session of a pooled sandbox, else null\"}]}",
            "owner.kind: supervisor (qvm up --detach), foreground (qvm up), session (a pooled sandbox), cli (booting),",
            "library, unknown."})
final class PsCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    private final CliContext ctx;

    PsCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        SandboxStates states = SandboxStates.at(ctx.stateRoot(dirs.stateDir));
        Instant now = Instant.now();
        List<Row> rows = new ArrayList<>();
        for (Sandboxes.Entry e : Sandboxes.list(states)) {
            rows.add(new Row(e.id(), e.status(), e.qemuPid(), e.ready() == null ? null : e.ready().accelerator(),
                    e.uptimeSeconds(now), new Owner(e.owner() == null ? null : e.owner().ownerPid(), e.ownerAlive(),
                            e.ownerKind()),
                    e.ready() == null ? null : e.ready().controlSocket(), e.state().dir().toString(), e.mode(),
                    e.session()));
        }
        Output.emit(spec.commandLine().getOut(), new PsReport("qvm.ps/1", states.root().toString(), rows),
                json.enabled());
        return ExitCode.OK.code();
    }

    record Owner(Long pid, boolean alive, String kind) {
    }

    record Row(String id, String state, Long qemuPid, String accelerator, Long uptimeSeconds, Owner owner,
            String controlSocket, String stateDir, String mode, String session) {
    }

    /** {@code qvm ps} — schema {@code qvm.ps/1}. */
    record PsReport(String schema, String stateDir, List<Row> sandboxes) implements Report {
        @Override
        public void printText(PrintWriter out) {
            if (sandboxes.isEmpty()) {
                out.println("no sandboxes (state directory " + stateDir + ")");
                return;
            }
            out.printf("%-14s %-10s %-8s %-6s %-7s %-9s %s%n", "ID", "STATE", "PID", "ACCEL", "MODE", "UPTIME", "OWNER");
            for (Row r : sandboxes) {
                String owner = r.session() != null ? "session " + r.session()
                        : r.owner().pid() == null ? "-" : r.owner().kind() + " " + r.owner().pid()
                                + (r.owner().alive() ? "" : " (gone)");
                String mode = r.mode() == null ? "-"
                        : io.qvm.cli.control.ControlTarget.FRESH_PER_RENDER.equals(r.mode()) ? "fresh" : "reused";
                out.printf("%-14s %-10s %-8s %-6s %-7s %-9s %s%n", r.id(), r.state(), r.qemuPid() == null ? "-" : r.qemuPid(),
                        r.accelerator() == null ? "-" : r.accelerator(), mode, uptime(r.uptimeSeconds()), owner);
            }
        }

        private static String uptime(Long s) {
            if (s == null) {
                return "-";
            }
            return s >= 3600 ? String.format("%dh%02dm", s / 3600, s / 60 % 60) : String.format("%dm%02ds", s / 60, s % 60);
        }
    }
}
