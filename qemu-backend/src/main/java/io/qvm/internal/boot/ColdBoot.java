package io.qvm.internal.boot;

import io.qvm.BootFailedException;
import io.qvm.SandboxException;
import io.qvm.internal.qemu.VmRole;
import io.qvm.internal.sandbox.QemuSandbox;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A sandbox booted from scratch to READY, and the retry policy every boot shares (template VMs'
 * too): a boot whose worker died before READY, or whose guest stalled before the init ran runsc,
 * is tried once more in a fresh VM; every other failure is final at once.
 */
public final class ColdBoot {

    private static final System.Logger LOG = System.getLogger(ColdBoot.class.getName());

    /**
     * How many times a boot is tried when the worker process itself dies before READY (status
     * other than 0, reported by the guest init). Runtimes with a JIT occasionally abort at start
     * under gVisor (seen here: the worker JVM ended with status 134 in about 2 of 25 boots, before
     * printing anything); a fresh VM then boots normally. Every other failure is final at once.
     * All attempts share the one boot deadline.
     */
    public static final int ATTEMPTS = 2;

    private final Supplier<VmStart.Context> context;
    private final Consumer<String> progress;
    private final Consumer<QemuSandbox> started;

    /**
     * @param context where each VM is recorded and what it runs as (asked per attempt)
     * @param started told of each sandbox that reached READY
     */
    public ColdBoot(Supplier<VmStart.Context> context, Consumer<String> progress, Consumer<QemuSandbox> started) {
        this.context = Objects.requireNonNull(context, "context");
        this.progress = Objects.requireNonNull(progress, "progress");
        this.started = Objects.requireNonNull(started, "started");
    }

    /**
     * Boots a sandbox of {@code plan}, retried as {@link #ATTEMPTS} says, within {@code deadline}.
     *
     * @param earlier notes of earlier attempts (template fallbacks, failed boots), for the boot report
     */
    public QemuSandbox boot(StartPlan plan, long deadline, List<String> earlier) {
        if (Thread.currentThread().isInterrupted()) {
            throw new SandboxException("interrupted before the sandbox could start");
        }
        for (int attempt = 1; ; attempt++) {
            try {
                return attempt(plan, deadline, earlier);
            } catch (BootFailedException e) {
                if (!retriable(e) || attempt >= ATTEMPTS || Deadlines.passed(deadline)) {
                    throw e;
                }
                note(progress, earlier, "boot attempt " + attempt + " failed: " + why(e) + "; retried in a fresh VM", e);
            }
        }
    }

    private QemuSandbox attempt(StartPlan plan, long deadline, List<String> earlierAttempts) {
        VmStart v = VmStart.launch(context.get(), plan, VmRole.cold(), deadline);
        v.awaitWorker(deadline);
        QemuSandbox sandbox = v.toSandbox(v.report(earlierAttempts, Optional.empty()));
        progress.accept("sandbox " + v.id() + ": ready in " + sandbox.bootReport().total().toMillis() + " ms");
        started.accept(sandbox);
        return sandbox;
    }

    /** Whether a fresh VM may succeed where this one failed: the worker died at start, or the guest stalled. */
    static boolean retriable(BootFailedException e) {
        return e.workerExitStatus().map(s -> s != 0).orElse(false) || e.guestStalled();
    }

    /** Why a boot failed, in a few words for a note. */
    static String why(BootFailedException e) {
        return e.workerExitStatus().filter(s -> s != 0).map(s -> "the worker exited with status " + s + " before READY")
                .orElse(e.guestStalled() ? "the guest stalled before the init ran runsc" : e.getMessage());
    }

    /** Says {@code note} (progress, log with the failure) and keeps it for the boot report. */
    static void note(Consumer<String> progress, List<String> earlier, String note, Exception e) {
        progress.accept(note);
        LOG.log(System.Logger.Level.WARNING, note + "\n" + e.getMessage());
        earlier.add(note);
    }
}
