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
 *     all its clones would share randomness (adr/0006, adr/0012). That clock is whole seconds and
 *     late by the command's way in (a second and more on a loaded host): the host then measures
 *     the offset and has the init step it away ({@link GuestControl#syncClock}); a guest clock
 *     still certainly more than {@link GuestControl#MAX_CLOCK_SKEW} off refuses the clone;
 * <li>{@code worker-ready}: a fresh HELLO with a new nonce answered. Sent only after the reseed:
 *     the worker drains gVisor's entropy buffer on HELLO, and what refills it must come from
 *     the reseeded CRNG;
 * <li>{@code status-checked}: one STATUS, answered with random bytes no earlier clone of this
 *     template reported (else the template is refused: its clones would share randomness). The
 *     worker's wall clock in it is noted, not waited for: gVisor's sentry takes up the clock the
 *     init set at its next calibration, about a second later (it is the guest kernel's clock, in
 *     the init's answer, that must be within {@link #RESTORE_CLOCK_SLACK} of the host's).
 * </ol>
 *
 * A {@link TemplateException} blames the template (the caller deletes it); any other failure
 * is the clone's, typed by {@link VmStart#fail}.
 */
final class CloneRestore {

    /**
     * How far outside the time between sending {@code restore} and reading the answer the guest
     * kernel's clock, as the init reports it right after setting it, may be: the host sends whole
     * seconds rounded to the nearest, and the init answers in whole seconds, truncated.
     */
    static final Duration RESTORE_CLOCK_SLACK = Duration.ofMillis(1500);

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
            long sent = System.currentTimeMillis();
            GuestControl.Restored r = p.control().restore(Instant.ofEpochMilli(sent),
                    hostSeed ? Optional.of(GuestControl.freshSeed()) : Optional.empty(),
                    Deadlines.remaining(deadline, Duration.ofSeconds(20)));
            checkClock(r, sent, System.currentTimeMillis());
            checkReseed(r, p.vmgenid(), hostSeed);
            Optional<GuestControl.Synced> synced = syncClock(p.control(), deadline);
            phases.put("clock-set", Deadlines.since(startNanos));
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
            WorkerStatus status = QemuSandbox.status(p.transport(), Deadlines.remaining(deadline, Duration.ofSeconds(20)));
            phases.put("status-checked", Deadlines.since(startNanos));
            check(template, status, freshRandom);
            QemuSandbox done = p.toSandbox(new BootReport(target.accel().accelerator().qemuName(), p.machine(),
                    p.transport().kind(), phases, notes(earlier, target, template, ready, status, r, synced),
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
     * The guest kernel's clock, right after the init set it, lies between when the host sent the
     * time and when it read the answer (within {@link #RESTORE_CLOCK_SLACK}): the init set it to the
     * time sent, at some moment in between. On a loaded host that span is seconds (16 clones
     * restored at once here: 4-5.5 s), so the host's clock at the answer alone is no measure.
     */
    static void checkClock(GuestControl.Restored r, long sentMillis, long answeredMillis) {
        long guest = r.guestEpochSeconds() * 1000;
        long slack = RESTORE_CLOCK_SLACK.toMillis();
        if (guest < sentMillis - slack || guest > answeredMillis + slack) {
            throw new SandboxException("the guest init could not set the restored clone's clock: it says "
                    + java.time.Instant.ofEpochSecond(r.guestEpochSeconds()) + ", outside "
                    + java.time.Instant.ofEpochMilli(sentMillis) + " .. " + java.time.Instant.ofEpochMilli(answeredMillis)
                    + " (when the host sent the time .. read the answer) by more than " + slack + " ms; refusing the"
                    + " clone");
        }
    }

    /**
     * Steps the guest's clock to the host's ({@link GuestControl#syncClock}); empty from an init
     * older than {@code step}, whose clone keeps the whole second {@code restore} set.
     *
     * @throws SandboxException the init could not step it, or it is still certainly more than
     *     {@link GuestControl#MAX_CLOCK_SKEW} off
     */
    static Optional<GuestControl.Synced> syncClock(GuestControl control, long deadline) throws IOException,
            InterruptedException {
        GuestControl.Synced s;
        try {
            s = control.syncClock(0, Deadlines.remaining(deadline, Duration.ofSeconds(20)));
        } catch (GuestControl.Refused e) {
            if (e.unknownCommand()) {
                return Optional.empty();
            }
            throw new SandboxException("the guest init could not step the restored clone's clock (" + e.getMessage()
                    + "); refusing the clone", e);
        }
        if (s.off(GuestControl.MAX_CLOCK_SKEW)) {
            throw new SandboxException("the restored clone's clock is " + s + " from the host's, more than "
                    + GuestControl.MAX_CLOCK_SKEW.toMillis() + " ms; refusing the clone");
        }
        return Optional.of(s);
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
            WorkerStatus status, GuestControl.Restored r, Optional<GuestControl.Synced> synced) {
        List<String> notes = new ArrayList<>(earlier);
        target.accel().warning().ifPresent(notes::add);
        String reseeds = r.forks() > 0 && r.reseeded() ? "vmgenid and the host's seed"
                : r.reseeded() ? "the host's seed" : "vmgenid";
        notes.add("restored from template " + template.id() + " (" + template.mode().id() + "); guest clock set ("
                + synced.map(c -> c + ", stepped to the host's").orElse("to the second: the image's init cannot step it")
                + "), the worker's " + (status.wallClockMillis() - System.currentTimeMillis()) + " ms from the host's at its "
                + "first STATUS (gVisor takes the set clock up within about a second), random bytes of its own (CRNG "
                + "reseeded by " + reseeds + ")");
        notes.add("worker " + ready.version() + " capabilities " + ready.capabilities());
        return notes;
    }

    /** The clone's own view of itself: random bytes no earlier clone of this template reported. */
    private static void check(Template template, WorkerStatus status, Predicate<String> freshRandom) {
        if (!freshRandom.test(status.random())) {
            throw new TemplateException("two clones of template " + template.id() + " read the same bytes from "
                    + "/dev/urandom: their randomness is not their own");
        }
    }
}
