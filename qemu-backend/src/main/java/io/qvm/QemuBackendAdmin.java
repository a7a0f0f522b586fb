package io.qvm;

import io.qvm.admin.BackendAdmin;
import io.qvm.admin.GuestImages;
import io.qvm.admin.HostReport;
import io.qvm.admin.SandboxStates;
import io.qvm.admin.Templates;
import io.qvm.internal.boot.StartPlanner;
import io.qvm.internal.image.ImageResolver;
import io.qvm.internal.process.ReapReport;
import io.qvm.internal.template.Template;
import io.qvm.internal.template.TemplateStore;
import io.qvm.protocol.image.Arch;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * {@link BackendAdmin} over one {@link QemuVmBackend}'s parts (its planner, template store, template
 * build and reaper): their internal values mapped to the admin API's. It is handed the parts, not
 * the backend, so that it depends on nothing above it.
 */
final class QemuBackendAdmin implements BackendAdmin {

    private final StartPlanner planner;
    private final TemplateStore templates;
    private final Function<SandboxConfig, Template> buildTemplate;
    private final Function<SandboxConfig, String> templateId;
    private final Supplier<ReapReport> reap;
    private final ReapReport startupReap;

    QemuBackendAdmin(StartPlanner planner, TemplateStore templates, Function<SandboxConfig, Template> buildTemplate,
            Function<SandboxConfig, String> templateId, Supplier<ReapReport> reap, ReapReport startupReap) {
        this.templateId = templateId;
        this.planner = planner;
        this.templates = templates;
        this.buildTemplate = buildTemplate;
        this.reap = reap;
        this.startupReap = startupReap;
    }

    @Override
    public Arch hostArch() {
        return planner.host().arch();
    }

    @Override
    public Arch guestArch() {
        return planner.guestArch();
    }

    @Override
    public Optional<HostReport.Qemu> qemu() {
        return planner.host().qemu(guestArch()).map(q -> new HostReport.Qemu(q.guestArch(), q.binary(),
                q.version().toString(), q.compiledIn().stream().sorted().toList()));
    }

    @Override
    public Accelerator accelerator(SandboxConfig config) {
        return planner.acceleratorChoice(config).accelerator();
    }

    @Override
    public GuestImages.Image image() {
        ImageResolver.Resolved r = planner.image();
        return new GuestImages.Image(r.image().arch(), r.image().dir(), r.image().kernel(), r.image().kernelVersion(),
                r.image().sha256(), r.source().name(), r.describe());
    }

    @Override
    public String templateId(SandboxConfig config) {
        return templateId.apply(config);
    }

    @Override
    public Templates.TemplateInfo buildTemplate(SandboxConfig config) {
        Template t = buildTemplate.apply(config);
        return new Templates.TemplateInfo(t.id(), t.dir(), t.meta().mode(), t.meta().memoryMib(), t.meta().created(),
                t.meta().bootMillis(), t.meta().saveMillis(), t.meta().state().bytes(), t.meta().ram() == null
                        ? OptionalLong.empty() : OptionalLong.of(t.meta().ram().bytes()));
    }

    @Override
    public Templates templates() {
        return Templates.at(templates.root());
    }

    @Override
    public Optional<List<SandboxStates.Reaped>> startupReap() {
        return Optional.ofNullable(startupReap).map(QemuBackendAdmin::reaped);
    }

    @Override
    public List<SandboxStates.Reaped> reap() {
        return reaped(reap.get());
    }

    private static List<SandboxStates.Reaped> reaped(ReapReport r) {
        return r.entries().stream().map(e -> new SandboxStates.Reaped(e.sandboxId(),
                SandboxStates.Outcome.valueOf(e.outcome().name()), e.reason())).toList();
    }
}
