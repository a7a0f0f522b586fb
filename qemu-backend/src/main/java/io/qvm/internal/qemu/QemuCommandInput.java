package io.qvm.internal.qemu;

import io.qvm.Accelerator;
import io.qvm.SandboxConfig;
import io.qvm.protocol.image.Arch;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.QemuCapabilities;
import io.qvm.internal.host.QemuInstallation;
import io.qvm.internal.host.QemuVersion;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * Everything {@link QemuCommand} needs — and nothing it may look up by itself: the argv is a pure
 * function of this value. Build with {@link #builder()}.
 *
 * <p>The runsc platform comes from {@link SandboxConfig#runscPlatform()} (one source of truth),
 * like every other size and limit.
 *
 * @param hostOs      host OS family
 * @param hostArch    host CPU architecture
 * @param guestArch   guest CPU architecture
 * @param accelerator a concrete accelerator (the {@code AcceleratorSelector}'s choice, not AUTO)
 * @param qemuVersion the QEMU that will run the argv (for version-gated flags)
 * @param qemuBinary  argv[0]
 * @param capabilities what that QEMU reported it supports (the argv follows it)
 * @param config      sizes and limits
 * @param kernel      the image's {@code vmlinuz}
 * @param initrd      the image's {@code initramfs.cpio.lz4}
 * @param qmpSocket   unix socket QEMU listens on for QMP
 * @param consoleLog  file receiving the guest's serial console
 * @param eventsLog   file receiving the guest init's events port ({@code qvm.events})
 * @param pidFile     file QEMU writes its pid to
 * @param transport   virtio-serial (with its socket) or vsock (with the guest CID)
 * @param controlSocket unix socket of the guest init's control port ({@code qvm.control})
 * @param role        cold boot, template or clone ({@link VmRole})
 * @param runAs       the unprivileged user QEMU drops to after its setup, when the host process is
 *                    root ({@code io.qvm.internal.process.QemuUser}); empty: QEMU keeps the host
 *                    process's (unprivileged) user
 * @param guestReseed whether the image's init reseeds the guest kernel's CRNG from a seed the host
 *                    sends when a clone is restored (its manifest's {@code crng_reseed}; adr/0012):
 *                    then a machine without a vmgenid device can be a template too
 * @param classArchiveOut where QEMU writes the worker's class archive when this boot makes one
 *                    ({@code qvm.class_archive=make} and a file behind the port {@code qvm.archive});
 *                    empty: the port is there, on a null chardev, and the init makes none (adr/0018)
 */
public record QemuCommandInput(HostOs hostOs, Arch hostArch, Arch guestArch, Accelerator accelerator,
        QemuVersion qemuVersion, Path qemuBinary, QemuCapabilities capabilities, SandboxConfig config, Path kernel, Path initrd, Path qmpSocket,
        Path consoleLog, Path eventsLog, Path pidFile, GuestTransport transport, Path controlSocket, VmRole role,
        Optional<String> runAs, boolean guestReseed, Optional<Path> classArchiveOut) {

    public QemuCommandInput {
        Objects.requireNonNull(hostOs, "hostOs");
        Objects.requireNonNull(hostArch, "hostArch");
        Objects.requireNonNull(guestArch, "guestArch");
        Objects.requireNonNull(accelerator, "accelerator");
        Objects.requireNonNull(qemuVersion, "qemuVersion");
        Objects.requireNonNull(qemuBinary, "qemuBinary");
        Objects.requireNonNull(capabilities, "capabilities");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(kernel, "kernel");
        Objects.requireNonNull(initrd, "initrd");
        Objects.requireNonNull(qmpSocket, "qmpSocket");
        Objects.requireNonNull(consoleLog, "consoleLog");
        Objects.requireNonNull(eventsLog, "eventsLog");
        Objects.requireNonNull(pidFile, "pidFile");
        Objects.requireNonNull(transport, "transport");
        Objects.requireNonNull(controlSocket, "controlSocket");
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(runAs, "runAs");
        Objects.requireNonNull(classArchiveOut, "classArchiveOut");
        if (classArchiveOut.isPresent() && role instanceof VmRole.Clone) {
            throw new IllegalArgumentException("a clone does not boot, so it cannot make a class archive");
        }
    }

    /** The same input with another role (a template and its clones differ only in role and paths). */
    public QemuCommandInput withRole(VmRole newRole) {
        return new QemuCommandInput(hostOs, hostArch, guestArch, accelerator, qemuVersion, qemuBinary, capabilities,
                config, kernel,
                initrd, qmpSocket, consoleLog, eventsLog, pidFile, transport, controlSocket, newRole, runAs, guestReseed,
                newRole instanceof VmRole.Clone ? Optional.empty() : classArchiveOut);
    }

    /** A builder; every field must be set. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builder for {@link QemuCommandInput}; {@link #build()} checks every field is set. */
    public static final class Builder {
        private HostOs hostOs;
        private Arch hostArch;
        private Arch guestArch;
        private Accelerator accelerator;
        private QemuVersion qemuVersion;
        private Path qemuBinary;
        private QemuCapabilities capabilities;
        private SandboxConfig config;
        private Path kernel;
        private Path initrd;
        private Path qmpSocket;
        private Path consoleLog;
        private Path eventsLog;
        private Path pidFile;
        private GuestTransport transport;
        private Path controlSocket;
        private VmRole role = VmRole.cold();
        private Optional<String> runAs = Optional.empty();
        private boolean guestReseed;
        private Optional<Path> classArchiveOut = Optional.empty();

        private Builder() {
        }

        public Builder host(HostOs os, Arch arch) {
            this.hostOs = os;
            this.hostArch = arch;
            return this;
        }

        public Builder guestArch(Arch guestArch) {
            this.guestArch = guestArch;
            return this;
        }

        public Builder accelerator(Accelerator accelerator) {
            this.accelerator = accelerator;
            return this;
        }

        /** The binary and version; {@link #capabilities} must be set too. */
        public Builder qemu(Path binary, QemuVersion version) {
            this.qemuBinary = binary;
            this.qemuVersion = version;
            return this;
        }

        /** What the QEMU reported it supports. */
        public Builder capabilities(QemuCapabilities capabilities) {
            this.capabilities = capabilities;
            return this;
        }

        /** The binary, its version and its capabilities, as probed. */
        public Builder qemu(QemuInstallation qemu) {
            return qemu(qemu.binary(), qemu.version()).capabilities(qemu.capabilities());
        }

        public Builder config(SandboxConfig config) {
            this.config = config;
            return this;
        }

        public Builder image(Path kernel, Path initrd) {
            this.kernel = kernel;
            this.initrd = initrd;
            return this;
        }

        public Builder qmpSocket(Path qmpSocket) {
            this.qmpSocket = qmpSocket;
            return this;
        }

        public Builder consoleLog(Path consoleLog) {
            this.consoleLog = consoleLog;
            return this;
        }

        public Builder eventsLog(Path eventsLog) {
            this.eventsLog = eventsLog;
            return this;
        }

        public Builder pidFile(Path pidFile) {
            this.pidFile = pidFile;
            return this;
        }

        public Builder transport(GuestTransport transport) {
            this.transport = transport;
            return this;
        }

        public Builder controlSocket(Path controlSocket) {
            this.controlSocket = controlSocket;
            return this;
        }

        /** Default: {@link VmRole.Cold}. */
        public Builder role(VmRole role) {
            this.role = role;
            return this;
        }

        /** Default: empty (QEMU keeps the host process's user). */
        public Builder runAs(Optional<String> user) {
            this.runAs = user;
            return this;
        }

        /** Default: false (an image whose init cannot reseed: only a machine with vmgenid can be a template). */
        public Builder guestReseed(boolean reseeds) {
            this.guestReseed = reseeds;
            return this;
        }

        /** Default: empty (the init makes no class archive). */
        public Builder classArchiveOut(Optional<Path> file) {
            this.classArchiveOut = file;
            return this;
        }

        /** @throws NullPointerException naming the first missing field */
        public QemuCommandInput build() {
            return new QemuCommandInput(hostOs, hostArch, guestArch, accelerator, qemuVersion, qemuBinary, capabilities,
                    config, kernel, initrd, qmpSocket, consoleLog, eventsLog, pidFile, transport, controlSocket, role, runAs,
                    guestReseed, classArchiveOut);
        }
    }
}
