package io.qvm;

import io.qvm.admin.BackendAdmin;
import io.qvm.admin.GuestImages;
import io.qvm.admin.HostReport;
import io.qvm.admin.SandboxStates;
import io.qvm.admin.Templates;
import io.qvm.internal.image.ImageResolver;
import io.qvm.internal.process.ReapReport;
import io.qvm.internal.template.Template;
import io.qvm.protocol.image.Arch;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/** {@link BackendAdmin} over one {@link QemuVmBackend}: its internals mapped to the admin API's values. */
final class QemuBackendAdmin implements BackendAdmin {

    private final QemuVmBackend backend;

    QemuBackendAdmin(QemuVmBackend backend) {
        this.backend = backend;
    }

    @Override
    public Arch hostArch() {
        return backend.host().arch();
    }

    @Override
    public Arch guestArch() {
        return backend.guestArch();
    }

    @Override
    public Optional<HostReport.Qemu> qemu() {
        return backend.host().qemu(guestArch()).map(q -> new HostReport.Qemu(q.guestArch(), q.binary(),
                q.version().toString(), q.compiledIn().stream().sorted().toList()));
    }

    @Override
    public Accelerator accelerator(SandboxConfig config) {
        return backend.acceleratorChoice(config).accelerator();
    }

    @Override
    public GuestImages.Image image() {
        ImageResolver.Resolved r = backend.image();
        return new GuestImages.Image(r.image().arch(), r.image().dir(), r.image().kernel(), r.image().kernelVersion(),
                r.image().sha256(), r.source().name(), r.describe());
    }

    @Override
    public String templateId(SandboxConfig config) {
        return backend.templateKey(config).id();
    }

    @Override
    public Templates.TemplateInfo buildTemplate(SandboxConfig config) {
        Template t = backend.buildTemplate(config);
        return new Templates.TemplateInfo(t.id(), t.dir(), t.meta().mode(), t.meta().memoryMib(), t.meta().created(),
                t.meta().bootMillis(), t.meta().saveMillis(), t.meta().state().bytes(), t.meta().ram() == null
                        ? OptionalLong.empty() : OptionalLong.of(t.meta().ram().bytes()));
    }

    @Override
    public Templates templates() {
        return Templates.at(backend.templateStore().root());
    }

    @Override
    public Optional<List<SandboxStates.Reaped>> startupReap() {
        return Optional.ofNullable(backend.startupReap()).map(QemuBackendAdmin::reaped);
    }

    @Override
    public List<SandboxStates.Reaped> reap() {
        return reaped(backend.reap());
    }

    private static List<SandboxStates.Reaped> reaped(ReapReport r) {
        return r.entries().stream().map(e -> new SandboxStates.Reaped(e.sandboxId(),
                SandboxStates.Outcome.valueOf(e.outcome().name()), e.reason())).toList();
    }
}
