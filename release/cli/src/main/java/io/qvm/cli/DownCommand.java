package io.qvm.cli;

import io.qvm.admin.SandboxStates;
import io.qvm.cli.control.ControlClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code qvm down}: stops sandboxes and qvm up sessions (a session's pooled sandboxes with it). A running one gets GOODBYE on its control socket (its
 * supervisor stops it gracefully and exits); one still booting, or whose socket does not answer,
 * is stopped by {@link OwnerStop} (POSIX: its owner SIGTERMed, whose shutdown hook stops it;
 * Windows: a booting one's proven QEMU stopped, after which its owner cleans up and exits — never
 * TerminateProcess on an owner); a stale one (owner gone) is reaped by
 * {@link SandboxStates#reap}, which kills QEMU only after checking the pid really is that QEMU.
 * A sandbox owned by another program (the library) is left alone.
 */
@Command(name = "down", description = "Stop a sandbox (or --all): gracefully through its supervisor, else by reaping it.",
        footer = {"", "JSON (--json), schema qvm.down/1:",
            "  {\"schema\":\"qvm.down/1\", \"sandboxes\":[{\"id\", \"outcome\", \"detail\"}]}",
            "outcome: stopped, reaped, refused (owned by another program), failed. Exit 0 when every one stopped,",
            "7 for an unknown id, 1 when one could not be stopped."})
final class DownCommand implements Callable<Integer> {

    static final Duration GOODBYE_DEADLINE = Duration.ofMinutes(2);
    static final Duration EXIT_DEADLINE = Duration.ofMinutes(1);

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Parameters(index = "0", arity = "0..1", paramLabel = "ID", description = "The sandbox to stop.")
    String id;

    @Option(names = "--all", description = "Stop every sandbox of this state directory.")
    boolean all;

    private final CliContext ctx;
    private final OwnerStop stopper = OwnerStop.system(EXIT_DEADLINE);

    DownCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() throws Exception {
        if ((id == null) == !all) {
            throw new ParameterException(spec.commandLine(), "give a sandbox ID or --all (one of them)");
        }
        SandboxStates states = SandboxStates.at(ctx.stateRoot(dirs.stateDir));
        List<Sandboxes.Entry> targets = new ArrayList<>();
        if (all) {
            // a session's pooled sandboxes stop with it
            Sandboxes.list(states).stream().filter(e -> !e.status().equals("pooled")).forEach(targets::add);
        } else {
            targets.add(Sandboxes.find(states, id).orElseThrow(() -> new CliException(ExitCode.NOT_FOUND, "NOT_FOUND",
                    "no sandbox " + id + " in " + states.root(), "qvm ps lists the sandboxes", null)));
        }
        Progress progress = new Progress(spec.commandLine().getErr(), ctx.interactive() && !json.enabled());
        List<Result> results = new ArrayList<>();
        for (Sandboxes.Entry e : targets) {
            results.add(stop(e, states, progress));
        }
        progress.done();
        Output.emit(spec.commandLine().getOut(), new DownReport("qvm.down/1", results), json.enabled());
        boolean ok = results.stream().allMatch(r -> r.outcome().equals("stopped") || r.outcome().equals("reaped"));
        return ok ? ExitCode.OK.code() : ExitCode.ERROR.code();
    }

    private Result stop(Sandboxes.Entry e, SandboxStates states, Progress progress) {
        try {
            switch (e.status()) {
                case "running":
                case "exiting":
                    progress.line("stopping sandbox " + e.id() + " through its supervisor");
                    try (ControlClient c = ControlClient.connect(e.ready())) {
                        c.goodbye(GOODBYE_DEADLINE);
                    } catch (IOException unreachable) {
                        return terminateOwner(e, states, "its control socket does not answer ("
                                + unreachable.getMessage() + ")", e.ready().controlSocket());
                    }
                    waitForOwner(e);
                    return finish(e, states, "stopped", "stopped gracefully by its supervisor (pid "
                            + e.ready().supervisorPid() + ")");
                case "booting":
                    return terminateOwner(e, states, "it is still booting", null);
                case "stale":
                    progress.line("reaping sandbox " + e.id() + " (its owner is gone)");
                    return reap(e, states);
                case "pooled":
                    return new Result(e.id(), "refused", "a sandbox of qvm up session " + e.session()
                            + ", which stops it after its document: qvm down " + e.session() + " stops the session");
                case "unmanaged":
                    return new Result(e.id(), "refused", "owned by pid " + e.owner().ownerPid()
                            + ", a program using the qvm library, not the qvm CLI: stop it from that program");
                default:
                    return new Result(e.id(), "failed", "cannot read its owner.json; remove " + e.state().dir()
                            + " by hand if no QEMU of it runs");
            }
        } catch (RuntimeException | IOException | InterruptedException x) {
            if (x instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return new Result(e.id(), "failed", x.getMessage() == null ? x.toString() : x.getMessage());
        }
    }

    /**
     * Stops a live qvm owner that cannot be asked over a control socket ({@link OwnerStop}: SIGTERM
     * on POSIX, its proven QEMU on Windows, never TerminateProcess on the owner), then reaps what
     * is left.
     *
     * @param controlSocket the socket that did not answer; null for a booting sandbox
     */
    private Result terminateOwner(Sandboxes.Entry e, SandboxStates states, String why, String controlSocket)
            throws IOException, InterruptedException {
        Optional<ProcessHandle> owner = Sandboxes.alive(e.owner().ownerPid(), e.owner().ownerStartedAt());
        String how = "its owner pid " + e.owner().ownerPid() + " is gone";
        if (owner.isPresent() && owner.get().pid() != ProcessHandle.current().pid()) {
            if (!Sandboxes.isQvmCli(owner.get(), e.owner())) {
                return new Result(e.id(), "refused", why + ", and its owner pid " + owner.get().pid()
                        + " is not the qvm CLI: stop it from that program");
            }
            OwnerStop.Outcome o = stopper.stop(e.state(), owner.get(), controlSocket == null, controlSocket);
            if (!o.stopped()) {
                return new Result(e.id(), "failed", why + "; " + o.detail());
            }
            how = o.detail();
        }
        Result r = reap(e, states);
        return new Result(e.id(), r.outcome().equals("failed") ? "failed" : "stopped", why + "; " + how + "; "
                + r.detail());
    }

    private Result reap(Sandboxes.Entry e, SandboxStates states) throws IOException {
        Optional<SandboxStates.Reaped> mine = states.reap(ctx.runtimeRoot()).stream()
                .filter(r -> r.sandboxId().equals(e.id())).findFirst();
        if (mine.isEmpty()) {
            return new Result(e.id(), "reaped", "already gone");
        }
        return new Result(e.id(), mine.get().outcome().removed() ? "reaped" : "failed",
                mine.get().outcome() + ": " + mine.get().reason());
    }

    /** Waits until the supervisor has exited (it exits right after answering GOODBYE). */
    private static void waitForOwner(Sandboxes.Entry e) throws InterruptedException {
        Optional<ProcessHandle> owner = Sandboxes.alive(e.owner().ownerPid(), e.owner().ownerStartedAt());
        if (owner.isPresent() && owner.get().pid() != ProcessHandle.current().pid()) {
            try {
                owner.get().onExit().get(EXIT_DEADLINE.toSeconds(), TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException t) {
                // reported by finish(): the state directory is still there
            }
        }
    }

    private Result finish(Sandboxes.Entry e, SandboxStates states, String outcome, String detail)
            throws IOException {
        if (Files.exists(e.state().dir())) {
            Sandboxes.Entry now = Sandboxes.describe(e.state());
            if (now.status().equals("stale")) {
                return reap(now, states);
            }
            return new Result(e.id(), "failed", detail + ", but its state directory " + e.state().dir()
                    + " is still there (state " + now.status() + ")");
        }
        return new Result(e.id(), outcome, detail);
    }

    record Result(String id, String outcome, String detail) {
    }

    /** {@code qvm down} — schema {@code qvm.down/1}. */
    record DownReport(String schema, List<Result> sandboxes) implements Report {
        @Override
        public void printText(PrintWriter out) {
            if (sandboxes.isEmpty()) {
                out.println("no sandboxes");
            }
            sandboxes.forEach(r -> out.println(r.id() + ": " + r.outcome() + " — " + r.detail()));
        }
    }
}
