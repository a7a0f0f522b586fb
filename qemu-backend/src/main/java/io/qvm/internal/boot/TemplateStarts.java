package io.qvm.internal.boot;

import io.qvm.BootFailedException;
import io.qvm.SandboxException;
import io.qvm.internal.qemu.QemuCommandInput;
import io.qvm.internal.qemu.TemplateSupport;
import io.qvm.internal.qemu.VmRole;
import io.qvm.internal.sandbox.QemuSandbox;
import io.qvm.internal.template.Template;
import io.qvm.internal.template.TemplateException;
import io.qvm.internal.template.TemplateKey;
import io.qvm.internal.template.TemplateMode;
import io.qvm.internal.template.TemplateStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Sandboxes started as clones of a template (adr/0006): which template a start restores from
 * (shared RAM where possible and safe, else the full state), building it when missing, restoring
 * and proving a clone, and falling back — to the next template mode, then to a cold boot — with
 * the reason said once per backend and template key.
 */
public final class TemplateStarts {

    private static final System.Logger LOG = System.getLogger(TemplateStarts.class.getName());

    private final TemplateStore templates;
    private final Supplier<VmStart.Context> context;
    private final Consumer<String> progress;
    private final Consumer<QemuSandbox> started;
    private final RestoreSlots restoreSlots;
    /** Template key id → why templates are off for it in this backend (said once). */
    private final Map<String, String> templatesOff = new ConcurrentHashMap<>();
    /** Template id → the random bytes its recent clones reported (a repeat means shared randomness). */
    private final Map<String, Set<String>> cloneRandoms = new ConcurrentHashMap<>();

    /** Whether template VMs are warmed before they are saved ({@link TemplateWarmUp}). */
    private final boolean warmUp;

    public TemplateStarts(TemplateStore templates, Supplier<VmStart.Context> context, Consumer<String> progress,
            Consumer<QemuSandbox> started, RestoreSlots restoreSlots, boolean warmUp) {
        this.warmUp = warmUp;
        this.templates = Objects.requireNonNull(templates, "templates");
        this.restoreSlots = Objects.requireNonNull(restoreSlots, "restoreSlots");
        this.context = Objects.requireNonNull(context, "context");
        this.progress = Objects.requireNonNull(progress, "progress");
        this.started = Objects.requireNonNull(started, "started");
    }

    /** Which template a sandbox of a start restores from, and how it is made. */
    public record Plan(TemplateKey key, TemplateMode mode, QemuCommandInput input, StartPlan start) {
    }

    /** The template plan of {@code start} in {@code mode}, warmed or not as this backend's templates are. */
    public Plan plan(StartPlan start, TemplateMode mode) {
        QemuCommandInput input = TemplateKey.placeholders(start.input(), mode, start.image()).build();
        return new Plan(TemplateKey.of(input, mode, start.image(), start.qemu())
                .withWarmUp(warmUp ? TemplateWarmUp.fingerprint() : "off"), mode, input, start);
    }

    /** The template mode sandboxes of {@code start} use here: shared RAM where it is possible and safe, else the full state. */
    public Plan preferred(StartPlan start) {
        Plan shared = plan(start, TemplateMode.SHARED_RAM);
        return TemplateSupport.of(shared.input()).level() == TemplateSupport.Level.SHARED_RAM ? shared
                : plan(start, TemplateMode.FULL);
    }

    /**
     * Every clone of a template that serves this start failed for a reason of its own (a deadline
     * missed under load, QEMU gone): the template is fine, and a cold boot in their place is the
     * heaviest start there is. The backend cold-boots in its place only while no other such
     * fallback runs ({@code QemuVmBackend}); {@link #last()} is the last clone's failure.
     */
    public static final class RestoresFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient Template template;
        private final SandboxException last;

        RestoresFailed(Template template, SandboxException last) {
            super("every restore from template " + template.id() + " failed", last, false, false);
            this.template = template;
            this.last = last;
        }

        public Template template() {
            return template;
        }

        public SandboxException last() {
            return last;
        }
    }

    /**
     * A sandbox restored from the template of {@code start} (built first if needed), or empty
     * when templates cannot serve it here — the reason said once per backend and key — or the
     * template was found unusable (a cold boot follows).
     *
     * @throws RestoresFailed every clone failed for a reason of its own (the template stays)
     */
    public Optional<QemuSandbox> start(StartPlan start, long deadline, List<String> earlier) {
        Plan full = plan(start, TemplateMode.FULL);
        // decided from the probe's cached capabilities: no QEMU starts to find out
        TemplateSupport support = TemplateSupport.of(full.input());
        if (support.level() == TemplateSupport.Level.NONE) {
            sayOnce(full.key().id(), "templates are not used for this sandbox (" + support.reason()
                    + "): every sandbox cold-boots");
            return Optional.empty();
        }
        for (TemplateMode mode : TemplateMode.values()) {
            Plan plan = mode == TemplateMode.FULL ? full : plan(start, mode);
            if (mode == TemplateMode.SHARED_RAM && support.level() != TemplateSupport.Level.SHARED_RAM) {
                sayOnce(plan.key().id(), "shared-RAM templates are not used here: " + support.reason());
                continue;
            }
            if (templatesOff.get(plan.key().id()) != null) {
                continue; // this mode failed before in this backend: the next mode, then cold boot
            }
            Template template;
            try {
                template = templates.obtain(plan.key(), mode, (dir, m) -> buildVm(plan, dir, deadline), progress);
            } catch (SandboxException e) {
                if (Thread.currentThread().isInterrupted()) {
                    throw e;
                }
                String next = mode == TemplateMode.SHARED_RAM ? "trying a full-state template" : "cold-booting instead";
                sayOnce(plan.key().id(), "cannot build a " + mode.id() + " template: "
                        + e.getMessage().lines().findFirst().orElse("") + "; " + next);
                LOG.log(System.Logger.Level.WARNING, "template build failed", e);
                continue;
            }
            return restoreOrGiveUp(plan, template, deadline, earlier);
        }
        return Optional.empty();
    }

    /**
     * Up to {@link ColdBoot#ATTEMPTS} clones of {@code template}; empty when the template proved
     * unusable (it is deleted; a cold boot follows).
     *
     * @throws RestoresFailed no clone came up, each for a reason of its own
     */
    private Optional<QemuSandbox> restoreOrGiveUp(Plan plan, Template template, long deadline, List<String> earlier) {
        SandboxException last = null;
        for (int attempt = 1; attempt <= ColdBoot.ATTEMPTS && !Deadlines.passed(deadline); attempt++) {
            try {
                return Optional.of(restore(plan, template, deadline, earlier));
            } catch (TemplateException e) {
                // the template itself is at fault (QEMU refused it, clones share randomness)
                templates.discard(template.id());
                sayOnce(plan.key().id(), "template " + template.id() + " is unusable: " + e.getMessage()
                        + "; it was deleted, and this backend cold-boots sandboxes of this config");
                return Optional.empty();
            } catch (SandboxException e) {
                if (Thread.currentThread().isInterrupted()) {
                    throw e; // the caller gave up (a pool closing): no second clone, no cold boot
                }
                last = e;
                ColdBoot.note(progress, earlier, "restore attempt " + attempt + " from template " + template.id()
                        + " failed: " + e.getMessage().lines().findFirst().orElse("") + (attempt < ColdBoot.ATTEMPTS
                        ? "; trying a fresh clone" : ""), e);
            }
        }
        throw new RestoresFailed(template, last != null ? last : new BootFailedException("the boot deadline passed "
                + "before a clone of template " + template.id() + " could be restored"));
    }

    /**
     * Builds (or finds) the template of {@code plan} without starting a sandbox.
     *
     * @throws SandboxException the build failed
     */
    public Template build(Plan plan, long deadline) {
        return templates.obtain(plan.key(), plan.mode(), (dir, m) -> buildVm(plan, dir, deadline), progress);
    }

    /** @throws TemplateException templates cannot be used for {@code plan} on this host */
    public static void requireSupported(Plan plan) {
        TemplateSupport support = TemplateSupport.of(plan.input());
        if (support.level() == TemplateSupport.Level.NONE) {
            throw new TemplateException("templates are not used here: " + support.reason());
        }
    }

    /** Boots the template VM to READY (retried like a cold boot), then saves it: {@link TemplateSave}. */
    private TemplateStore.Built buildVm(Plan plan, Path dir, long deadline) throws Exception {
        progress.accept("template " + plan.key().id() + ": booting the template VM (" + plan.mode().id()
                + "; once per image, QEMU and config)");
        Optional<Path> ram = plan.mode() == TemplateMode.SHARED_RAM ? Optional.of(dir.resolve(Template.RAM))
                : Optional.empty();
        for (int attempt = 1; ; attempt++) {
            try {
                if (ram.isPresent()) {
                    Files.deleteIfExists(ram.get()); // a failed attempt's pages
                }
                VmStart v = VmStart.launch(context.get(), plan.start(), new VmRole.Template(ram), deadline);
                v.awaitWorker(deadline);
                return TemplateSave.save(v, v.toTemplateVm(v.report(List.of(), Optional.empty())), dir, plan.mode(),
                        warmUp, deadline, progress);
            } catch (BootFailedException e) {
                if (!ColdBoot.retriable(e) || attempt >= ColdBoot.ATTEMPTS || Deadlines.passed(deadline)
                        || Thread.currentThread().isInterrupted()) {
                    throw e;
                }
                ColdBoot.note(progress, new ArrayList<>(), "template boot attempt " + attempt + " failed: "
                        + ColdBoot.why(e) + "; retried in a fresh VM", e);
            }
        }
    }

    /**
     * A clone of {@code template}, proven (see {@link CloneRestore}), restored in one of the
     * backend's {@link RestoreSlots}: a start that finds them all taken waits its turn.
     */
    private QemuSandbox restore(Plan plan, Template template, long deadline, List<String> earlier) {
        QemuSandbox done;
        try (RestoreSlots.Slot slot = restoreSlots.acquire(deadline)) {
            List<String> notes = earlier;
            if (slot.waited().toMillis() >= 10) {
                notes = new ArrayList<>(earlier);
                notes.add("waited " + slot.waited().toMillis() + " ms for one of " + restoreSlots.slots()
                        + " restore slots (one per host core)");
            }
            done = CloneRestore.restore(context.get(), plan.start(), template,
                    random -> freshRandom(template, random), notes, deadline);
        }
        started.accept(done);
        return done;
    }

    /** Whether no earlier clone of {@code template} (of the last 256) reported these random bytes. */
    private boolean freshRandom(Template template, String random) {
        Set<String> seen = cloneRandoms.computeIfAbsent(template.id(),
                k -> Collections.synchronizedSet(Collections.newSetFromMap(new LinkedHashMap<>() {
                    private static final long serialVersionUID = 1L;

                    @Override
                    protected boolean removeEldestEntry(Map.Entry<String, Boolean> e) {
                        return size() > 256;
                    }
                })));
        return seen.add(random);
    }

    private void sayOnce(String keyId, String why) {
        if (templatesOff.putIfAbsent(keyId, why) == null) {
            progress.accept("qvm: " + why);
            LOG.log(System.Logger.Level.WARNING, why);
        }
    }
}
