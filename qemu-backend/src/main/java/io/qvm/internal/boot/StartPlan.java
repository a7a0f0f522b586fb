package io.qvm.internal.boot;

import io.qvm.SandboxConfig;
import io.qvm.internal.image.GuestImage;
import io.qvm.internal.probe.AcceleratorChoice;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.qemu.MachineProfile;
import io.qvm.internal.qemu.QemuCommandInput;
import io.qvm.internal.qemu.VmRole;
import io.qvm.protocol.Limits;
import java.util.Objects;

/**
 * Everything one sandbox start decides before any VM runs, computed once per start and shared by
 * its template plan, its template build, its clones and its cold-boot attempts: the host as
 * probed, its QEMU, the verified image, the accelerator, the machine profiles (a cold VM's and a
 * template's, which may differ: microvm is never a template) and the limits the worker gets in
 * HELLO.
 */
public record StartPlan(SandboxConfig config, HostInfo host, QemuInstallation qemu, GuestImage image,
        AcceleratorChoice accel, MachineProfile coldProfile, MachineProfile templateProfile, Limits limits) {

    public StartPlan {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(qemu, "qemu");
        Objects.requireNonNull(image, "image");
        Objects.requireNonNull(accel, "accel");
        Objects.requireNonNull(coldProfile, "coldProfile");
        Objects.requireNonNull(templateProfile, "templateProfile");
        Objects.requireNonNull(limits, "limits");
    }

    /**
     * The plan for {@code config} on this host, QEMU, image and accelerator.
     *
     * @throws io.qvm.HostSetupException this QEMU cannot run this guest with this accelerator
     */
    public static StartPlan of(SandboxConfig config, HostInfo host, QemuInstallation qemu, GuestImage image,
            AcceleratorChoice accel) {
        return new StartPlan(config, host, qemu, image, accel, profile(host, qemu, image, accel, false),
                profile(host, qemu, image, accel, true), VmStart.limits(config));
    }

    private static MachineProfile profile(HostInfo h, QemuInstallation q, GuestImage image, AcceleratorChoice accel,
            boolean templated) {
        return MachineProfile.select(h.os(), h.arch(), image.arch(), accel.accelerator(), q.version(), templated,
                q.capabilities());
    }

    /** The machine a VM of {@code role} runs: a template's for templates and clones, else the cold one. */
    public MachineProfile profile(VmRole role) {
        return role instanceof VmRole.Cold ? coldProfile : templateProfile;
    }

    /** The argv input every VM of this plan shares (host, guest, accelerator, QEMU, config); a fresh builder. */
    public QemuCommandInput.Builder input() {
        return QemuCommandInput.builder().host(host.os(), host.arch()).guestArch(image.arch())
                .accelerator(accel.accelerator()).qemu(qemu).config(config);
    }
}
