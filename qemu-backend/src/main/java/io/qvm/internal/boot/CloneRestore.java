package io.qvm.internal.boot;

import io.qvm.BootReport;
import io.qvm.SandboxException;
import io.qvm.internal.qemu.VmRole;
import io.qvm.internal.sandbox.GuestControl;
import io.qvm.internal.sandbox.QemuSandbox;
import io.qvm.internal.template.MigrationStream;
import io.qvm.internal.template.Template;
import io.qvm.internal.template.TemplateException;
import io.qvm.internal.template.TemplateMode;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Ready;
import io.qvm.protocol.WorkerStatus;
import io.qvm.transport.SandboxTransport;
import io.qvm.transport.TransportException;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * The steps of a clone's readiness, after {@link VmStart#launch} started QEMU paused with
 * {@code -incoming defer} on the template's RAM file, the template's state file on its stdin:
 *
 * <ol>
 * <li>{@code state-loaded}: the template's device state loaded ({@code migrate-incoming fd:0});
 * <li>{@code resumed}: {@code cont};
 * <li>{@code clock-set}: the guest init sets the wall clock from the host, mixes a fresh seed of
 *     the host's into the guest kernel's input pool and reseeds its CRNG (an image with
 *     {@code crng_reseed}), and reports that, and, on a machine with a vmgenid device, that the
 *     kernel reseeded by itself after the VM fork. A reseed missing refuses the template, since
 *     all its clones would share randomness (adr/0006, adr/0012);
 * <li>{@code worker-ready}: a fresh HELLO with a new nonce answered. Sent only after the reseed:
 *     the worker drains gVisor's entropy buffer on HELLO, and what refills it must come from
 *     the reseeded CRNG;
 * <li>{@code status-checked}: STATUS until the worker's clock is within {@link #CLOCK_SETTLED}
 *     of the host's (for at most {@link #CLOCK_WAIT}), then judged: off by more than
 *     {@link #MAX_CLOCK_SKEW}, or random bytes an earlier clone reported, refuse the clone.
 * </ol>
 *
 * A {@link TemplateException} blames the template (the caller deletes it); any other failure
 * is the clone's, typed by {@link VmStart#fail}.
 */
final class CloneRestore {

    static final Duration CLOCK_SETTLED = Duration.ofMillis(500);
    static final Duration CLOCK_WAIT = Duration.ofSeconds(30);
    /** A skew that moved less than {@link #CLOCK_STEADY_DRIFT} over this long is where the clock will stay. */
    static final Duration CLOCK_STEADY = Duration.ofSeconds(1);
    static final Duration CLOCK_STEADY_DRIFT = Duration.ofMillis(100);
    /** A steady skew is taken only this far inside {@link #MAX_CLOCK_SKEW}, so {@link #check}'s later look still passes. */
    static final Duration CLOCK_STEADY_MAX = Duration.ofMillis(1500);

    /** A restored worker whose clock is further off than this from the host's is refused. */
    public static final Duration MAX_CLOCK_SKEW = Duration.ofSeconds(2);

    private CloneRestore() {
    }

    /**
     * Restores a clone of {@code template} and proves it.
     *
     * @param freshRandom whether the random bytes a clone reported were seen from no earlier clone
     *     of this template (and records them)
     * @param earlier notes of earlier attempts, for the boot report
     */
    public static QemuSandbox restore(VmStart.Context ctx, StartPlan target, Template template,
            Predicate<String> freshRandom, List<String> earlier, long deadline) {
        // the template was verified by TemplateStore.obtain() for this very start (adr/0006: every use)
        VmStart p = VmStart.launch(ctx, target, new VmRole.Clone(template.ramFile()),
                Optional.of(template.stateFile()), deadline);
        long startNanos = p.startNanos();
        Map<String, Duration> phases = p.phases();
        try {
            MigrationStream.restore(p.qmp(), template.mode() == TemplateMode.SHARED_RAM,
                    Deadlines.remaining(deadline, Duration.ofSeconds(60)));
            phases.put("state-loaded", Deadlines.since(startNanos));
            p.qmp().cont();
            phases.put("resumed", Deadlines.since(startNanos));
            boolean hostSeed = target.image().manifest().crngReseed();
            GuestControl.Restored r = p.control().restore(Instant.now(),
                    hostSeed ? Optional.of(GuestControl.freshSeed()) : Optional.empty(),
                    Deadlines.remaining(deadline, Duration.ofSeconds(20)));
            phases.put("clock-set", Deadlines.since(startNanos));
            checkReseed(r, p.vmgenid(), hostSeed);
            Hello hello = Hello.fresh(target.limits());
            Duration helloDeadline = Deadlines.remaining(deadline);
            CompletableFuture<Ready> handshake = CompletableFuture.supplyAsync(() -> {
                try {
                    return p.transport().handshake(hello, helloDeadline);
                } catch (TransportException | InterruptedException e) {
                    throw new CompletionException(e);
                }
            });
            Ready ready = awaitReady(handshake, deadline);
            phases.put("worker-ready", Deadlines.since(startNanos));
            WorkerStatus status = awaitClock(p.transport(), deadline);
            phases.put("status-checked", Deadlines.since(startNanos));
            check(template, status, freshRandom);
            QemuSandbox done = p.toSandbox(new BootReport(target.accel().accelerator().qemuName(), p.machine(),
                    p.transport().kind(), phases, notes(earlier, target, template, ready, status, r),
                    Optional.of(template.id())));
            p.say("restored from template " + template.id() + " in " + phases.get("worker-ready").toMillis() + " ms");
            return done;
        } catch (TemplateException e) {
            p.fail(e);
            throw e;
        } catch (RuntimeException | IOException | InterruptedException | ExecutionException | TimeoutException
                | io.qvm.internal.qmp.QmpException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw p.fail(e);
        }
    }

    /**
     * Every reseed the clone's machine and image allow must have happened: the kernel's own
     * (vmgenid) where the machine has the device, the host's seed where the image's init takes
     * one, and at least one of them at all.
     */
    static void checkReseed(GuestControl.Restored r, boolean vmgenid, boolean hostSeed) {
        if (vmgenid && r.forks() < 1) {
            throw new TemplateException("the guest kernel did not reseed its random generator after the restore "
                    + "(no 'crng reseeded due to virtual machine fork' within the init's wait): clones would share "
                    + "randomness");
        }
        if (hostSeed && !r.reseeded()) {
            throw new TemplateException("the guest init could not reseed the kernel's random generator from the "
                    + "host's seed (RNDADDENTROPY/RNDRESEEDCRNG through perl failed): clones would share randomness");
        }
        if (!vmgenid && !hostSeed) {
            throw new TemplateException("neither a vmgenid device nor the image's init reseeds a clone's random "
                    + "generator: clones would share randomness");
        }
    }

    private static Ready awaitReady(CompletableFuture<Ready> handshake, long deadline) throws IOException,
            InterruptedException, TimeoutException {
        try {
            return handshake.get(Deadlines.remaining(deadline).toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause() instanceof CompletionException ce && ce.getCause() != null
                    ? ce.getCause() : e.getCause();
            if (c instanceof IOException io) {
                throw io;
            }
            if (c instanceof RuntimeException re) {
                throw re;
            }
            throw new SandboxException("the clone's handshake failed: " + c, c);
        }
    }

    private static List<String> notes(List<String> earlier, StartPlan target, Template template, Ready ready,
            WorkerStatus status, GuestControl.Restored r) {
        List<String> notes = new ArrayList<>(earlier);
        target.accel().warning().ifPresent(notes::add);
        String reseeds = r.forks() > 0 && r.reseeded() ? "vmgenid and the host's seed"
                : r.reseeded() ? "the host's seed" : "vmgenid";
        notes.add("restored from template " + template.id() + " (" + template.mode().id() + "); worker clock "
                + (status.wallClockMillis() - System.currentTimeMillis()) + " ms from the host's, random bytes of "
                + "its own (CRNG reseeded by " + reseeds + ")");
        notes.add("worker " + ready.version() + " capabilities " + ready.capabilities());
        return notes;
    }

    /**
     * The clone's own view of itself: its clock within {@link #MAX_CLOCK_SKEW} of the host's, and
     * random bytes no earlier clone of this template reported.
     */
    private static void check(Template template, WorkerStatus status, Predicate<String> freshRandom) {
        long skew = Math.abs(status.wallClockMillis() - System.currentTimeMillis());
        if (skew > MAX_CLOCK_SKEW.toMillis()) {
            throw new SandboxException("the restored worker's clock is " + skew + " ms off the host's although the "
                    + "init set it: refusing the clone");
        }
        if (!freshRandom.test(status.random())) {
            throw new TemplateException("two clones of template " + template.id() + " read the same bytes from "
                    + "/dev/urandom: their randomness is not their own");
        }
    }

    /**
     * STATUS until the worker's clock is within {@link #CLOCK_SETTLED} of the host's, for at most
     * {@link #CLOCK_WAIT}. The init sets the guest kernel's clock at once, but gVisor's sentry
     * keeps its own calibrated clock, updated about once a second; it notices the jump (and falls
     * back to the guest's clock) at its next update, which after a restore under TCG came 1–2 s
     * later on a quiet host — and more than 5 s later on a host loaded 8× over its cores, where
     * clones were refused (2.5–12.6 s off) and each fell back to a cold boot. So it waits up to
     * 30 s (within the restore's deadline) for the clock to settle; the guarantee, a clock within
     * {@link #MAX_CLOCK_SKEW}, is unchanged. It stops waiting early for a clock within
     * {@link #CLOCK_STEADY_MAX} whose skew stayed put (within {@link #CLOCK_STEADY_DRIFT} of where
     * it was {@link #CLOCK_STEADY} ago): that is the guest kernel's own clock, which the init set in whole
     * seconds and late by the time a freshly restored guest under TCG takes to run
     * {@code date} (0.5–1 s measured for aarch64: every clone then waited the whole 30 s), and
     * waiting longer changes nothing. The last status is returned either way; {@link #check}
     * judges it.
     */
    private static WorkerStatus awaitClock(SandboxTransport transport, long deadline) throws InterruptedException,
            ExecutionException, TimeoutException {
        long until = System.nanoTime() + CLOCK_WAIT.toNanos();
        long steadySince = 0;
        long steadySkew = Long.MIN_VALUE;
        while (true) {
            WorkerStatus st = QemuSandbox.status(transport, Deadlines.remaining(deadline, Duration.ofSeconds(20)));
            long now = System.nanoTime();
            long signed = st.wallClockMillis() - System.currentTimeMillis();
            long skew = Math.abs(signed);
            if (steadySkew == Long.MIN_VALUE || Math.abs(signed - steadySkew) > CLOCK_STEADY_DRIFT.toMillis()) {
                steadySkew = signed;
                steadySince = now;
            }
            boolean steady = skew <= CLOCK_STEADY_MAX.toMillis() && now - steadySince >= CLOCK_STEADY.toNanos();
            if (skew <= CLOCK_SETTLED.toMillis() || steady || now > until) {
                return st;
            }
            Thread.sleep(100);
        }
    }
}
