package io.qvm.admin;

import io.qvm.Accelerator;
import io.qvm.Sandbox;
import io.qvm.SandboxConfig;
import io.qvm.SandboxException;
import io.qvm.protocol.image.Arch;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What one {@link io.qvm.QemuVmBackend} decided and holds, for an operator's tool: the host and
 * guest architecture, the accelerator and image a sandbox gets, its templates, its reaping.
 * Obtained from {@link io.qvm.QemuVmBackend#admin()}; every call answers as a start would
 * (probing the host and verifying the image the first time).
 */
public interface BackendAdmin {

    /** The host's CPU architecture. */
    Arch hostArch();

    /** The guest architecture sandboxes of this backend run: the builder's, else the host's. */
    Arch guestArch();

    /** The host's QEMU for the guest architecture, if there is one. */
    Optional<HostReport.Qemu> qemu();

    /** The accelerator a sandbox with {@code config} runs on (the probe's verdict is cached). */
    Accelerator accelerator(SandboxConfig config);

    /** The guest image sandboxes boot, resolved and verified as a start would. */
    GuestImages.Image image();

    /**
     * The id of the template sandboxes of {@code config} are cloned from on this host (whether or
     * not it is built yet).
     */
    String templateId(SandboxConfig config);

    /**
     * Builds (or finds) the template of {@code config} without starting a sandbox.
     *
     * @throws SandboxException templates cannot be used for it here, or the build failed
     */
    Templates.TemplateInfo buildTemplate(SandboxConfig config);

    /** This backend's templates. */
    Templates templates();

    /** What the reaper did when this backend was created (empty if reaping was off). */
    Optional<List<SandboxStates.Reaped>> startupReap();

    /**
     * Stops QEMUs whose owner is gone and removes their state and cgroups, as creating a backend
     * does.
     *
     * @throws io.qvm.HostSetupException the state directory is not a private directory of this user
     */
    List<SandboxStates.Reaped> reap();

    /**
     * One raw ECHO round trip to {@code sandbox}'s worker: {@code body} up, {@code replyBytes}
     * down; what a transport benchmark times.
     *
     * @return the reply's body length
     * @throws IllegalArgumentException {@code sandbox} is not a QEMU sandbox
     */
    static int echo(Sandbox sandbox, byte[] body, int replyBytes) {
        if (!(sandbox instanceof io.qvm.internal.sandbox.QemuSandbox q)) {
            throw new IllegalArgumentException("not a QEMU sandbox: " + sandbox);
        }
        io.qvm.protocol.Frame f = q.call(new io.qvm.protocol.Frame(io.qvm.protocol.FrameKind.ECHO, 0,
                com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode().put("replyBytes", replyBytes),
                body), "echo");
        return f.body() == null ? 0 : f.body().length;
    }

    /** The process id of {@code sandbox}'s QEMU (empty: not a QEMU sandbox). */
    static OptionalLong qemuPid(Sandbox sandbox) {
        return sandbox instanceof io.qvm.internal.sandbox.QemuSandbox q ? OptionalLong.of(q.pid()) : OptionalLong.empty();
    }
}
