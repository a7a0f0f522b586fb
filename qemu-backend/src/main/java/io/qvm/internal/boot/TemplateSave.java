package io.qvm.internal.boot;

import io.qvm.internal.sandbox.QemuSandbox;
import io.qvm.internal.template.MigrationStream;
import io.qvm.internal.template.Template;
import io.qvm.internal.template.TemplateMode;
import io.qvm.internal.template.TemplateStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Consumer;

/**
 * The last steps of a template build, once its VM answered READY: the {@link TemplateWarmUp}
 * renders, the init's control port answers a ping (the channel a clone's restore uses), QMP
 * {@code stop} and the migration stream saved into the template directory, then QEMU quit. The host stays connected to both ports
 * while the VM is saved: a virtio-serial port whose host end disconnects reads as end of input
 * in the guest, which would end the worker (FINDINGS).
 */
final class TemplateSave {

    private TemplateSave() {
    }

    /**
     * Warms {@code vm} (started by {@code start} as a template VM) if {@code warmUp}, leaving
     * {@link TemplateWarmUp#margin} of {@code deadlineNanos}, then saves it into {@code dir} and
     * discards it.
     */
    public static TemplateStore.Built save(VmStart start, QemuSandbox vm, Path dir, TemplateMode mode,
            boolean warmUp, long deadlineNanos, Consumer<String> progress) throws Exception {
        try {
            if (warmUp) {
                TemplateWarmUp.Result warm = TemplateWarmUp.run(vm, deadlineNanos, progress);
                progress.accept("template VM " + vm.id() + " warmed: " + warm.summary());
            }
            start.control().ping(Duration.ofSeconds(10));
            MigrationStream.Saved saved = MigrationStream.save(start.qmp(), start.migrationSocket(),
                    dir.resolve(Template.STATE), mode == TemplateMode.SHARED_RAM, Duration.ofSeconds(120));
            return new TemplateStore.Built(start.config().memoryMib(), vm.bootReport().total().toMillis(),
                    saved.took().toMillis());
        } finally {
            // Never resume a saved template: its clones map the pages it would write. quit, no GOODBYE.
            vm.discard();
        }
    }
}
