package io.qvm.internal.qemu;

import io.qvm.HostSetupException;
import io.qvm.Accelerator;
import io.qvm.SandboxConfig;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.QemuCapabilities;
import io.qvm.internal.host.QemuVersion;
import io.qvm.protocol.image.KernelCommandLine;
import io.qvm.protocol.image.KernelCommandLine.Key;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The QEMU command line for one sandbox: a pure function from {@link QemuCommandInput} to argv.
 * No I/O, no environment, no clock — golden files pin its output for every host/guest pair.
 *
 * <p>What every command line has, in this order:
 * <ol>
 * <li>{@code -nodefaults -no-user-config -display none -no-reboot}: no default devices (so no
 *     NIC, no VGA, no monitor on stdio), no config files from the host, a guest reboot (and
 *     {@code panic=-1}) ends QEMU;</li>
 * <li>machine, accelerator and CPU from {@link MachineProfile};</li>
 * <li>{@code -smp}, {@code -m} from the {@link SandboxConfig};</li>
 * <li>direct kernel boot: {@code -kernel -initrd -append} with the kernel command line of
 *     {@link #kernelCommandLine};</li>
 * <li>the serial console into a file ({@code -chardev file,id=con} + {@code -serial chardev:con});</li>
 * <li>QMP on a unix socket ({@code -chardev socket,id=qmp,…,server=on,wait=off} +
 *     {@code -mon chardev=qmp,mode=control}) and {@code -pidfile};</li>
 * <li>when the host process is root ({@link QemuCommandInput#runAs()}): {@code -runas USER}
 *     ({@code -run-with user=USER} from QEMU 9.1, which deprecates {@code -runas}): QEMU sets up
 *     as root, then drops to the unprivileged user for good before the guest runs;</li>
 * <li>{@code -sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny}
 *     (QEMU's seccomp filter) wherever the build has it — required on Linux, absent from macOS
 *     and Windows builds; {@link #SECCOMP_RUNAS} with a privilege drop;</li>
 * <li>panic → exit: {@code -action panic=exit-failure} (QEMU ≥ 7.1; {@code panic=shutdown} on
 *     6.0–7.0) and the machine's pvpanic device where the guest can find it (not on microvm);</li>
 * <li>the worker channel: {@code virtio-serial-device}/{@code -pci} + chardev {@code qvmw} +
 *     {@code virtserialport name=qvm.worker}, or {@code vhost-vsock-device}/{@code -pci} with the
 *     guest CID;</li>
 * <li>the init's control port: chardev {@code qvmc} + {@code virtserialport name=qvm.control}
 *     (the host sets the clock of a restored clone through it; the worker cannot reach it);</li>
 * <li>templates and clones ({@link VmRole}): RAM as {@code memory-backend-file} ({@code share=on}
 *     for the template, {@code share=off} for a clone), {@code vmgenid}; a clone also gets
 *     {@code -S -incoming defer} instead of the kernel.</li>
 * </ol>
 * Never a network device of any kind: no {@code -nic}, {@code -netdev}, {@code -net}.
 *
 * <p>Every optional argument follows what the QEMU reported ({@link QemuCommandInput#capabilities()}):
 * {@code -sandbox}, {@code -run-with user=} (else {@code -runas}), the q35 devices switched off,
 * pvpanic, microvm. A required one this build lacks ({@code -action}, virtio-serial, vmgenid for a
 * template, {@code memory-backend-file} for shared RAM, vhost-vsock for vsock, seccomp on Linux)
 * is a {@link HostSetupException} naming it and what to install.
 *
 * <p>Version gates: qvm needs QEMU ≥ 6.0 ({@code -action}, {@code pvpanic-pci}); on Windows ≥ 7.1
 * (unix-socket chardevs on Windows arrived in 7.1).
 */
public final class QemuCommand {

    /** Oldest QEMU qvm builds command lines for. */
    public static final QemuVersion MIN_QEMU = new QemuVersion(6, 0, 0);
    /** Oldest QEMU with AF_UNIX chardevs on Windows. */
    public static final QemuVersion MIN_QEMU_WINDOWS = new QemuVersion(7, 1, 0);
    /** Longest unix socket path in bytes: {@code sun_path} is 104 bytes on macOS/BSD (108 on Linux), minus the NUL. */
    public static final int MAX_SOCKET_PATH_BYTES = 103;

    /** The QEMU seccomp sandbox options used on Linux hosts. */
    public static final String SECCOMP = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny";

    /**
     * The seccomp options with a privilege drop: {@code elevateprivileges=allow}. QEMU installs
     * its filter while parsing its options and drops to the {@code -runas} user at the end of its
     * setup, with {@code setgid}/{@code setuid}; {@code deny} (and {@code children}) forbid exactly
     * those calls, and QEMU 7.2 then dies with SIGSYS at start (measured here). After the drop the
     * real, effective and saved ids are all the user's and the filter has set no_new_privs, so
     * the set*id calls can no longer raise privileges: the filter's other rules stay as they are.
     */
    public static final String SECCOMP_RUNAS = "on,obsolete=deny,elevateprivileges=allow,spawn=deny,resourcecontrol=deny";

    private QemuCommand() {
    }

    /**
     * Builds the argv (argv[0] is the QEMU binary).
     *
     * @throws HostSetupException when the inputs describe a VM this QEMU cannot run:
     *     too old a QEMU, a socket path too long, vsock off Linux, a hardware accelerator for a
     *     foreign guest, AUTO instead of a concrete accelerator
     */
    public static List<String> build(QemuCommandInput in) {
        checkVersion(in);
        VmRole role = in.role();
        boolean templated = !(role instanceof VmRole.Cold);
        QemuCapabilities caps = in.capabilities();
        MachineProfile p = MachineProfile.select(in.hostOs(), in.hostArch(), in.guestArch(), in.accelerator(),
                in.qemuVersion(), templated, caps);
        if (templated) {
            clonesUnreseeded(p, in).ifPresent(why -> {
                throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, why
                        + ": it cannot be used as a template");
            });
        }
        if (role.ramFile().isPresent() && !caps.hasObject(MEMORY_BACKEND_FILE)) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "this QEMU has no "
                    + MEMORY_BACKEND_FILE + " (-object help does not list it; QEMU builds it on POSIX hosts only, "
                    + "so never on Windows): a shared-RAM template cannot be made; use a full-state template");
        }
        SandboxConfig c = in.config();
        if (p.machine().contains("highmem=off") && c.memoryMib() > MachineProfile.HIGHMEM_OFF_MAX_MIB) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, c.memoryMib() + " MiB of guest "
                    + "RAM does not fit below 4 GiB, and QEMU " + in.qemuVersion() + " with HVF needs highmem=off: "
                    + "give the sandbox at most " + MachineProfile.HIGHMEM_OFF_MAX_MIB + " MiB or upgrade QEMU to >= "
                    + MachineProfile.VIRT_IPA_AWARE);
        }
        List<String> a = new ArrayList<>();
        a.add(in.qemuBinary().toString());
        add(a, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot");
        String machine = role.ramFile().isPresent() ? p.machine() + ",memory-backend=" + VmRole.RAM_ID : p.machine();
        add(a, "-M", machine, "-accel", p.accel(role), "-cpu", p.cpu());
        add(a, "-smp", Integer.toString(c.vcpus()), "-m", c.memoryMib() + "M");
        if (role.ramFile().isPresent()) {
            add(a, "-object", ramBackend(role, c, in.qemuVersion()));
        }
        if (role instanceof VmRole.Clone) {
            add(a, "-S", "-incoming", "defer");
        } else {
            add(a, "-kernel", in.kernel().toString(), "-initrd", in.initrd().toString());
            add(a, "-append", kernelCommandLine(p, c, in.transport(), in.classArchiveOut().isPresent()));
        }
        add(a, "-chardev", "file,id=con,path=" + opt(in.consoleLog()), "-serial", "chardev:con");
        add(a, "-chardev", "socket,id=qmp,path=" + socketOpt("qmpSocket", in.qmpSocket()) + ",server=on,wait=off",
                "-mon", "chardev=qmp,mode=control");
        add(a, "-pidfile", in.pidFile().toString());
        in.runAs().ifPresent(user -> add(a, runAs(in, user)));
        if (seccomp(in)) {
            add(a, "-sandbox", in.runAs().isPresent() ? SECCOMP_RUNAS : SECCOMP);
        }
        if (!caps.hasOption("action")) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "QEMU " + in.qemuVersion()
                    + " has no -action option (QMP query-command-line-options does not list it), so a guest panic "
                    + "would not end QEMU: upgrade QEMU to >= " + MIN_QEMU);
        }
        add(a, "-action", in.qemuVersion().atLeast(7, 1) ? "panic=exit-failure" : "panic=shutdown");
        p.pvpanic().ifPresent(d -> add(a, "-device", d));
        if (templated && p.vmgenid()) {
            add(a, "-device", "vmgenid,guid=auto");
        }
        String bus = p.mmio() ? "device" : "pci";
        requireDevice(in, "virtio-serial-" + bus, "the worker's and the init's ports");
        add(a, "-device", "virtio-serial-" + bus);
        if (in.transport() instanceof GuestTransport.Serial) {
            GuestTransport.Serial s = (GuestTransport.Serial) in.transport();
            add(a, "-chardev", "socket,id=" + GuestTransport.CHARDEV_ID + ",path=" + socketOpt("serial socket",
                    s.socket()) + ",server=on,wait=off");
            add(a, "-device", "virtserialport,chardev=" + GuestTransport.CHARDEV_ID + ",name="
                    + GuestTransport.PORT_NAME);
        }
        // The init's events: a file only the init writes (the worker never gets the port), unlike
        // the console, which carries the worker's stderr.
        add(a, "-chardev", "file,id=" + GuestTransport.EVENTS_CHARDEV_ID + ",path=" + opt(in.eventsLog()));
        add(a, "-device", "virtserialport,chardev=" + GuestTransport.EVENTS_CHARDEV_ID + ",name="
                + GuestTransport.EVENTS_PORT_NAME);
        add(a, "-chardev", "socket,id=" + GuestTransport.CONTROL_CHARDEV_ID + ",path=" + socketOpt("control socket",
                in.controlSocket()) + ",server=on,wait=off");
        add(a, "-device", "virtserialport,chardev=" + GuestTransport.CONTROL_CHARDEV_ID + ",name="
                + GuestTransport.CONTROL_PORT_NAME);
        // The class-archive port is on every VM, so that a template made while its boot made the
        // archive and its clones (which make none) have the same devices; only a boot that makes
        // one has a file behind it (the guest cannot grow it past ClassArchives.MAX_BYTES: VmStart
        // stops QEMU first).
        add(a, "-chardev", in.classArchiveOut().map(f -> "file,id=" + GuestTransport.ARCHIVE_CHARDEV_ID + ",path=" + opt(f))
                .orElse("null,id=" + GuestTransport.ARCHIVE_CHARDEV_ID));
        add(a, "-device", "virtserialport,chardev=" + GuestTransport.ARCHIVE_CHARDEV_ID + ",name="
                + GuestTransport.ARCHIVE_PORT_NAME);
        if (in.transport() instanceof GuestTransport.Vsock) {
            GuestTransport.Vsock v = (GuestTransport.Vsock) in.transport();
            if (in.hostOs() != HostOs.LINUX) {
                throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "vsock needs vhost-vsock, which only Linux hosts have (this "
                        + "host is " + in.hostOs() + "): use transport SERIAL");
            }
            requireDevice(in, "vhost-vsock-" + bus, "transport VSOCK");
            add(a, "-device", "vhost-vsock-" + bus + ",guest-cid=" + v.guestCid());
        }
        return List.copyOf(a);
    }

    /**
     * The RAM backend of a template ({@code share=on}: the guest's writes land in the file) or a
     * clone ({@code share=off,readonly=on,rom=off}: a private copy-on-write mapping of the
     * template's pages, from a file QEMU opens read-only — the guest still writes, into its
     * private copy). A clone never holds a writable handle on the template's RAM, which other
     * clones map too: on a QEMU older than {@link #READONLY_RAM_FILE} (which opens the file
     * {@code O_RDWR} whatever the mapping) a shared-RAM clone is refused.
     */
    private static String ramBackend(VmRole role, SandboxConfig c, QemuVersion version) {
        Path file = role.ramFile().orElseThrow();
        StringBuilder sb = new StringBuilder("memory-backend-file,id=").append(VmRole.RAM_ID)
                .append(",size=").append(c.memoryMib()).append("M,mem-path=").append(opt(file));
        if (role instanceof VmRole.Template) {
            sb.append(",share=on");
        } else {
            sharedRamClonesUnsupported(version).ifPresent(why -> {
                throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, why);
            });
            sb.append(",share=off,readonly=on,rom=off");
        }
        return sb.toString();
    }

    /**
     * Why clones of a template of machine {@code p} would share the guest's randomness, if they
     * would: the machine has no vmgenid device (the kernel's own reseed) and the image's init
     * cannot reseed the CRNG from the host's seed either (adr/0012).
     */
    public static java.util.Optional<String> clonesUnreseeded(MachineProfile p, QemuCommandInput in) {
        if (p.vmgenid() || in.guestReseed()) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of("machine " + p.machine().split(",")[0] + " of a " + in.guestArch().qemuName()
                + " guest has no vmgenid device" + (in.capabilities().hasDevice("vmgenid") ? ""
                : " (-device help does not list it)") + " and the image's init cannot reseed the guest's CRNG from "
                + "the host (no crng_reseed in its manifest: rebuild the image), so clones would share the guest's "
                + "randomness");
    }

    /** The RAM backend a shared-RAM template and its clones need (POSIX builds only). */
    public static final String MEMORY_BACKEND_FILE = "memory-backend-file";

    /** The first QEMU that opens a {@code memory-backend-file} read-only yet maps it writable ({@code rom=off}). */
    public static final QemuVersion READONLY_RAM_FILE = QemuVersion.of("8.2.0");

    /**
     * Why clones of a shared-RAM template cannot be started safely on QEMU {@code version}, if
     * they cannot: before 8.2, QEMU opens a {@code memory-backend-file} read-write even for a
     * private ({@code share=off}) mapping, so a clone whose guest escaped into QEMU could write
     * the template's pages — pages that other tenants' running clones still share and that every
     * later clone starts from.
     */
    public static java.util.Optional<String> sharedRamClonesUnsupported(QemuVersion version) {
        if (version.compareTo(READONLY_RAM_FILE) >= 0) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of("QEMU " + version + " opens a clone's RAM file read-write (a read-only open "
                + "with a copy-on-write mapping, readonly=on,rom=off, arrived in QEMU 8.2), so a clone that escaped "
                + "its guest could write the template's pages that other clones share; full-state templates are used "
                + "instead (each clone reads the whole RAM: seconds, not milliseconds). For millisecond clones install "
                + "QEMU >= 8.2 (Debian 12: bookworm-backports has 10.0)");
    }

    /**
     * The kernel command line, per CONTRACTS.md: the console, {@code panic=-1}, the machine's
     * own words ({@link MachineProfile#kernelWords()}), and the {@code qvm.*} keys the guest init
     * reads ({@link KernelCommandLine}).
     */
    public static String kernelCommandLine(MachineProfile p, SandboxConfig c, GuestTransport t) {
        return kernelCommandLine(p, c, t, false);
    }

    /** As above; with {@code makeClassArchive}, {@code qvm.class_archive=make} too (adr/0018). */
    public static String kernelCommandLine(MachineProfile p, SandboxConfig c, GuestTransport t, boolean makeClassArchive) {
        StringBuilder sb = new StringBuilder(kernelBase(p));
        if (t instanceof GuestTransport.Serial) {
            word(sb, Key.TRANSPORT, KernelCommandLine.TRANSPORT_SERIAL);
            word(sb, Key.PORT, GuestTransport.PORT_NAME);
        } else {
            word(sb, Key.TRANSPORT, KernelCommandLine.TRANSPORT_VSOCK);
            word(sb, Key.VSOCK_PORT, ((GuestTransport.Vsock) t).port());
        }
        word(sb, Key.CONTROL_PORT, GuestTransport.CONTROL_PORT_NAME);
        word(sb, Key.EVENTS_PORT, GuestTransport.EVENTS_PORT_NAME);
        word(sb, Key.XMX_MIB, c.workerHeapMib());
        word(sb, Key.CPUS, c.workerCpus());
        word(sb, Key.TMP_MIB, c.guestTmpMib());
        word(sb, Key.PLATFORM, c.runscPlatform().kernelValue());
        word(sb, Key.JIT, p.workerJit());
        if (makeClassArchive) {
            word(sb, Key.CLASS_ARCHIVE, KernelCommandLine.CLASS_ARCHIVE_MAKE);
            word(sb, Key.CLASS_ARCHIVE_SECONDS, io.qvm.internal.image.ClassArchives.makeSeconds(c));
        }
        return sb.toString();
    }

    /**
     * The words every guest of this machine boots with, qvm's or a probe's: the console,
     * {@code panic=-1} (a panic ends QEMU, with {@code -no-reboot}) and {@link
     * MachineProfile#kernelWords()}.
     */
    public static String kernelBase(MachineProfile p) {
        StringBuilder sb = new StringBuilder();
        sb.append("console=").append(p.consoleDevice()).append(" panic=-1");
        for (String w : p.kernelWords()) {
            sb.append(' ').append(w);
        }
        return sb.toString();
    }

    private static void word(StringBuilder sb, Key key, Object value) {
        sb.append(' ').append(key.word(value));
    }

    private static void checkVersion(QemuCommandInput in) {
        if (in.qemuVersion().compareTo(MIN_QEMU) < 0) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "QEMU " + in.qemuVersion() + " at " + in.qemuBinary()
                    + " is too old: qvm needs QEMU >= " + MIN_QEMU + "; upgrade QEMU");
        }
        if (in.hostOs() == HostOs.WINDOWS && in.qemuVersion().compareTo(MIN_QEMU_WINDOWS) < 0) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "QEMU " + in.qemuVersion() + " on Windows has no unix-socket "
                    + "chardevs (they arrived in " + MIN_QEMU_WINDOWS + "); upgrade QEMU");
        }
        if (in.accelerator() == Accelerator.AUTO) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "accelerator AUTO must be resolved (AcceleratorSelector) before "
                    + "building a QEMU command line");
        }
    }

    /** QEMU's option for dropping to {@code user}: {@code -run-with user=} from 9.1, else {@code -runas}. */
    private static String[] runAs(QemuCommandInput in, String user) {
        if (in.hostOs() == HostOs.WINDOWS) {
            throw new HostSetupException(HostSetupException.Problem.HOST_UNSUPPORTED, "QEMU on Windows cannot drop "
                    + "to another user (" + user + ")");
        }
        if (!user.matches("[a-z_][a-z0-9_-]{0,31}")) {
            throw new HostSetupException(HostSetupException.Problem.HOST_SETUP_NEEDED, "'" + user
                    + "' is not a user name QEMU can drop to");
        }
        return in.capabilities().optionHas("run-with", "user") ? new String[] {"-run-with", "user=" + user}
                : new String[] {"-runas", user};
    }

    /** The seccomp parameters qvm sets ({@link #SECCOMP}). */
    static final List<String> SECCOMP_PARAMETERS = List.of("obsolete", "elevateprivileges", "spawn", "resourcecontrol");

    /**
     * Whether {@code -sandbox} goes on the command line: where the build has it with every
     * parameter qvm sets (QMP {@code query-command-line-options} lists the group {@code sandbox}
     * only in builds with libseccomp). Linux builds must have it: it is a boundary there, and a
     * Linux QEMU without it is refused. macOS and Windows builds never have seccomp.
     */
    private static boolean seccomp(QemuCommandInput in) {
        QemuCapabilities caps = in.capabilities();
        boolean has = caps.hasOption("sandbox") && SECCOMP_PARAMETERS.stream().allMatch(k -> caps.optionHas("sandbox", k));
        if (!has && in.hostOs() == HostOs.LINUX) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "QEMU " + in.qemuVersion() + " at "
                    + in.qemuBinary() + " was built without seccomp (QMP query-command-line-options lists no -sandbox "
                    + "with " + String.join(", ", SECCOMP_PARAMETERS) + "), and on Linux qvm confines QEMU with it: "
                    + "install a QEMU built with libseccomp (Debian/Ubuntu: apt-get install qemu-system-x86; Fedora: "
                    + "dnf install qemu-system-x86-core; from source: ./configure --enable-seccomp)");
        }
        return has;
    }

    private static void requireDevice(QemuCommandInput in, String device, String forWhat) {
        if (!in.capabilities().hasDevice(device)) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "QEMU " + in.qemuVersion() + " at "
                    + in.qemuBinary() + " has no device " + device + " (-device help does not list it), needed for "
                    + forWhat + ": install a full qemu-system build ("
                    + in.hostOs().qemuInstallHint(in.guestArch()) + ")");
        }
    }

    /** A path as a QemuOpts value: commas are doubled. */
    static String opt(Path path) {
        return path.toString().replace(",", ",,");
    }

    private static String socketOpt(String what, Path socket) {
        int len = socket.toString().getBytes(StandardCharsets.UTF_8).length;
        if (len > MAX_SOCKET_PATH_BYTES) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, what + " path is " + len + " bytes, longer than the "
                    + MAX_SOCKET_PATH_BYTES + " a unix socket path may have on every OS: " + socket
                    + " — use a shorter state/runtime directory (e.g. under /tmp)");
        }
        return opt(socket);
    }

    private static void add(List<String> argv, String... args) {
        argv.addAll(List.of(args));
    }
}
