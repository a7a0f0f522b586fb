package io.qvm.internal.qemu;

import io.qvm.HostSetupException;
import io.qvm.Accelerator;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.KernelCommandLine;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.QemuCapabilities;
import io.qvm.internal.host.QemuVersion;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The machine type, CPU model and accelerator options for one (host, guest, accelerator, QEMU
 * version). Shared by {@link QemuCommand} and the functional probe, so the probe boots exactly
 * the machine the sandbox will run.
 *
 * <table>
 * <caption>choices</caption>
 * <tr><th>guest</th><th>accelerator</th><th>machine</th><th>cpu</th></tr>
 * <tr><td>x86_64</td><td>kvm</td><td>{@code microvm,x-option-roms=off,isa-serial=on,rtc=on,usb=off}</td><td>{@code host}</td></tr>
 * <tr><td>x86_64</td><td>tcg</td><td>{@code q35,}{@link #Q35_OFF}</td><td>{@code max}</td></tr>
 * <tr><td>x86_64</td><td>hvf, whpx</td><td>{@code q35,}{@link #Q35_OFF}</td><td>{@code host} / {@code Nehalem}</td></tr>
 * <tr><td>aarch64</td><td>any</td><td>{@code virt,gic-version=max,usb=off}</td><td>{@code host} (kvm, hvf) / {@code max} (tcg)</td></tr>
 * </table>
 *
 * <p>The machine's own devices that no sandbox uses are switched off, so a guest (or a QEMU bug
 * it could reach) has less to talk to. On q35 ({@link #Q35_OFF}): the VMware backdoor port
 * ({@code vmport}), the ICH9 AHCI controller ({@code sata}: there is no disk), the ICH9 SMBus and
 * its SPD EEPROMs ({@code smbus}), USB ({@code usb}: none without {@code -usb}, pinned off), and
 * from QEMU 7.0, which added the property, the i8042 PS/2 keyboard and mouse controller
 * ({@code i8042}; the guest has no input devices, reboots are {@code -no-reboot} and power-off
 * goes through ACPI). Kept on purpose: ACPI (the init's {@code poweroff -f} and vmgenid need it),
 * the HPET (TCG's clock calibration needs it, see below), the PIT and PIC (early boot), SMM (not
 * yet proven unneeded by a boot), and {@code graphics}: {@code graphics=off} removes no device
 * under {@code -nodefaults} but tells SeaBIOS to print on the serial console, which is the
 * guest's console file. microvm and aarch64 {@code virt} create no such devices by default;
 * {@code usb=off} pins that. The options are part of the argv, so template and clone get the
 * same machine, and a changed option gives a new template id.
 *
 * <p>Why: microvm boots fastest (FINDINGS: 1.1 s guest uptime against 1.55–1.8 s for {@code pc}
 * under TCG on an idle machine) but has no HPET and no ACPI PM timer. Under KVM that does not
 * matter (kvm-clock). Under TCG on a loaded host it does: the kernel's PIT calibration of the TSC
 * fails ("tsc: Unable to calibrate against PIT", "No reference (HPET/PMTIMER) available",
 * "Marking TSC unstable"), after which the guest clock never advances and the boot hangs — 4 of 4
 * microvm boots hung past 40–60 s at load average 5–10 on the 2-core build machine, where
 * {@code q35} booted every time (guest uptime 3.0–3.6 s) because it calibrates against the HPET.
 * That is the likely cause of the unexplained 300 s hangs under load in FINDINGS. So TCG gets
 * q35, and microvm is kept for KVM only. HVF and WHPX get q35 too (microvm is documented for
 * KVM and TCG only).
 *
 * <p>{@code host} passes the real CPU through where the accelerator supports it (KVM, HVF);
 * WHPX cannot do {@code -cpu host}, so it gets {@code Nehalem}, a named x86-64-v2 model (SSE4.2,
 * POPCNT) that every CPU able to run Windows 11 has; TCG gets {@code max}, every feature TCG can
 * emulate. aarch64 {@code virt} always gets an explicit {@code -cpu} (its default is a 32-bit
 * Cortex-A15) and {@code gic-version=max} (GICv3 under TCG and HVF, the host's under KVM; GICv2
 * would cap the guest at 8 vCPUs).
 *
 * @param machine       the {@code -M} value
 * @param cpu           the {@code -cpu} value
 * @param accel         the {@code -accel} value
 * @param consoleDevice the guest's name for the first serial port ({@code ttyS0} or {@code ttyAMA0})
 * @param mmio          true when virtio devices sit on virtio-mmio ({@code virtio-*-device}),
 *                      false for PCI ({@code virtio-*-pci})
 * @param pvpanic       the pvpanic device to add, if the machine can announce one to the guest
 * @param vmgenid       whether the guest can see a {@code vmgenid} device (it is announced through
 *                      ACPI: q35 has it; microvm's ACPI tables and a directly booted aarch64
 *                      {@code virt}, which describes itself by device tree, do not). Only such a
 *                      machine can be a template: its clones must reseed their randomness.
 */
public record MachineProfile(String machine, String cpu, String accel, String consoleDevice, boolean mmio,
        Optional<String> pvpanic, boolean vmgenid) {

    /**
     * The {@code -accel} value for a VM of {@code role}: {@link #accel()}, except that a clone runs
     * TCG single-threaded. Multi-threaded TCG is for the VM that runs alone and long — a cold boot,
     * a template's boot: there it took the worker to READY in 35.8–38.4 s against 48.0–55.4 s
     * single-threaded (QEMU 10.0.2, this 2-core host, {@code QVM_TEMPLATES=off qvm render}). Clones
     * run side by side (the pool restores the next while the last renders), and there each should
     * take at most one host core: with multi-threaded clones the default pool's documents per
     * minute fell here from 19.1 (7.2, single-threaded) to 12.1 and an idle running clone took 45 %
     * of a core; see docs/measured.md for the run with single-threaded clones. Migration does not
     * carry TCG's threading, so a clone of a multi-threaded template restores single-threaded.
     */
    public String accel(VmRole role) {
        return role instanceof VmRole.Clone ? accel.replace("thread=multi", "thread=single") : accel;
    }

    /**
     * The guest kernel's own words for this machine, which go on its command line before qvm's
     * ({@link QemuCommand#kernelCommandLine}): {@value #TCG_TIMERS} for a guest under TCG (x86_64
     * or aarch64), nothing otherwise.
     *
     * <p>Why: gVisor's runsc in every Debian suite (release-20240729) runs, in each systrap sandbox,
     * a goroutine that sleeps 400 µs in a loop for the sandbox's life (its fast-path monitor;
     * upstream stopped it in 2026, no Debian runsc has that). With high-resolution timers each of
     * those 2 500 wakes a second is a timer interrupt, a context switch and a few syscalls, which
     * under TCG cost tens of µs of emulated CPU each: a cold-booted sandbox took 50–55 % of a host
     * core doing nothing, and a JVM run beside a plain 400 µs sleeper loop (outside gVisor) took
     * 8.1–8.5 s instead of 6.1 s (docs/measured.md, 2026-12-07). Without high-resolution timers
     * the kernel rounds such sleeps up to its tick (4 ms at Debian's {@code HZ=250}), so the loop
     * wakes a tenth as often: cold boots took 21.9–25.5 s to READY against 26.8–27.8 s, the
     * worker's warm-up 7.6–8.7 s against 11.4–11.7 s, and an idle running sandbox 35–41 % of a
     * core against 53 %. What it costs: sleeps and timeouts in the guest wake on the tick, up to
     * 4 ms late; I/O (the worker's frames) still wakes its reader at once. The aarch64 guest,
     * emulated on this x86_64 host, gained more: 32.6 and 32.9 s to READY against 56.9 s (its
     * other boot without it crashed, the known aarch64 TCG crash), an idle sandbox 18–19 % of a
     * core against 41 %. Hardware accelerators keep high-resolution timers: there a wake costs
     * microseconds (an estimate, untested on a real host).
     */
    public List<String> kernelWords() {
        return underTcg() ? List.of(TCG_TIMERS) : List.of();
    }

    /** Whether the guest runs under TCG ({@link #accel} names it), whatever the host and guest architecture. */
    private boolean underTcg() {
        return accel.startsWith("tcg");
    }

    /** {@link #kernelWords()} of a guest under TCG: timers on the kernel's tick only. */
    public static final String TCG_TIMERS = "highres=off";

    /**
     * The worker JVM's compilers ({@code qvm.jit}): {@link KernelCommandLine#JIT_C1} for a guest
     * under TCG (x86_64 or aarch64), {@link KernelCommandLine#JIT_TIERED} (HotSpot's default) under
     * a hardware accelerator (adr/0019).
     *
     * <p>Why (the cause as we read it; the compile log was not examined): a fresh clone restores
     * a JVM whose hot methods the template's warm-up left in C1's profiling tier, with C2's
     * compiles of them still to come. Every clone then runs that slower profiling code and pays
     * those C2 compiles again, on an emulated CPU, and then throws them away with the VM. With C1
     * only ({@code -XX:TieredStopAtLevel=1}), the template's warm-up leaves finished code that
     * every clone uses as it is. Measured here (2026-12-07, TCG, QEMU 10.0.2, x86_64 guest,
     * samples/hello.*, 5 fresh clones each, two pairs of runs, adr/0019): a clone's first SVG
     * render 1.1–1.4 s against 2.9–3.3 s, its first PDF 0.7–1.0 s against 1.8–1.9 s; after the
     * pool's canned warm-up 0.37–0.49 s against 1.06–1.29 s (SVG) and 0.24–0.32 s against
     * 0.93–1.46 s (PDF), and that warm-up 3.2–4.4 s against 8.5–10.9 s; the
     * template's warm-up 8.8–10.4 s against 17.9–20.8 s. A long-lived cold-booted sandbox rendered as fast or
     * faster over its first 15 renders of each. What it may cost: a sandbox reused for many
     * documents never gets C2's faster code; under TCG no loss was seen in 15 renders. Hardware
     * accelerators keep tiered compilation, where a C2 compile costs what it does natively (an
     * estimate; whether C1 only would help clones there too is untested on a real host).
     */
    public String workerJit() {
        return underTcg() ? KernelCommandLine.JIT_C1 : KernelCommandLine.JIT_TIERED;
    }

    /** microvm, as verified here: ISA serial for the console, RTC for the clock, no option ROMs, no USB. */
    public static final String MICROVM = "microvm,x-option-roms=off,isa-serial=on,rtc=on,usb=off";
    /** The TCG translation cache cap in MiB (see {@link #accel}). */
    public static final int TCG_TB_MIB = 128;

    /** What q35 has switched off on every QEMU qvm supports (6.0+). */
    public static final String Q35_OFF = "vmport=off,sata=off,smbus=off,usb=off";
    /** ... and from QEMU 7.0 (the version that added the property). */
    public static final String Q35_OFF_7_0 = "i8042=off";
    /** aarch64 virt with the best GIC the accelerator offers, no USB. */
    public static final String VIRT = "virt,gic-version=max,usb=off";

    /** The q35 machine for {@code version}: q35 with every device of {@link #Q35_OFF} (and {@link #Q35_OFF_7_0}) off. */
    static String q35(QemuVersion version) {
        return "q35," + Q35_OFF + (version.atLeast(7, 0) ? "," + Q35_OFF_7_0 : "");
    }

    /**
     * The q35 machine as this QEMU reports it: each device of {@link #Q35_OFF} and
     * {@link #Q35_OFF_7_0} switched off where {@code -machine q35,help} lists the property (it is
     * hardening, not needed to boot: a build without the property gets the device).
     */
    static String q35(QemuCapabilities caps) {
        StringBuilder sb = new StringBuilder("q35");
        for (String off : (Q35_OFF + "," + Q35_OFF_7_0).split(",")) {
            if (caps.machineHas("q35", off.substring(0, off.indexOf('=')))) {
                sb.append(',').append(off);
            }
        }
        return sb.toString();
    }

    /** The first QEMU whose {@code virt} fits its memory map into the vCPU's physical address range. */
    public static final QemuVersion VIRT_IPA_AWARE = QemuVersion.of("7.0.0");

    /**
     * The first QEMU whose multi-threaded TCG qvm runs an x86_64 guest on an x86_64 host with:
     * {@code JitStressE2ETest} crashed the guest JVM in 2 of 3 multi-threaded boots on 7.2.22 and
     * in 0 of 8 on 10.0.2 (bookworm-backports), each boot stressed for 60 s ({@link #accel}).
     */
    public static final QemuVersion TCG_MULTI_THREADED = QemuVersion.of("10.0.0");
    /** The most RAM a {@code virt} guest can have with {@code highmem=off} (RAM from 1 GiB to 4 GiB). */
    public static final int HIGHMEM_OFF_MAX_MIB = 3072;

    public MachineProfile {
        Objects.requireNonNull(machine);
        Objects.requireNonNull(cpu);
        Objects.requireNonNull(accel);
        Objects.requireNonNull(consoleDevice);
        Objects.requireNonNull(pvpanic);
    }

    /**
     * Chooses the profile from the version alone (no probe: what every build of that version has).
     *
     * @throws HostSetupException when the pair cannot work (a hardware accelerator with
     *     a foreign guest, AUTO, or a QEMU too old for the accelerator)
     */
    public static MachineProfile select(HostOs hostOs, Arch hostArch, Arch guestArch, Accelerator accelerator,
            QemuVersion version) {
        return select(hostOs, hostArch, guestArch, accelerator, version, false, null);
    }

    /** {@link #select(HostOs, Arch, Arch, Accelerator, QemuVersion, boolean, QemuCapabilities)} from the version alone. */
    public static MachineProfile select(HostOs hostOs, Arch hostArch, Arch guestArch, Accelerator accelerator,
            QemuVersion version, boolean templated) {
        return select(hostOs, hostArch, guestArch, accelerator, version, templated, null);
    }

    /**
     * Chooses the profile for a VM that is, or may become, a template ({@code templated}): an
     * x86_64 guest under KVM then gets q35 rather than microvm, because a clone needs the
     * vmgenid device and microvm cannot announce it.
     *
     * <p>With {@code caps} (what the QEMU reported), the profile follows the build: the q35
     * devices switched off are those it has a property for, microvm is used only where it is
     * listed (else q35), the pvpanic device only where it exists, vmgenid only where the device
     * exists; a missing q35 or virt machine is an error. HVF with an aarch64 guest on QEMU
     * 6.2–6.x gets {@code highmem=off}: before 7.0, {@code virt} placed its high MMIO and
     * redistributor regions above the 36-bit IPA space that Apple's M1 Hypervisor.framework
     * gives a VM (QEMU 7.0 sizes the memory map to the vCPU's PA range), so the VM failed to
     * start there. {@code highmem=off} keeps everything below 4 GiB on every Mac, whatever its
     * IPA size, at the price of at most {@value #HIGHMEM_OFF_MAX_MIB} MiB of guest RAM — qvm's
     * sandboxes are far smaller. (Untested on a real Mac.)
     *
     * @param caps the QEMU's capabilities, or null to decide from the version alone
     */
    public static MachineProfile select(HostOs hostOs, Arch hostArch, Arch guestArch, Accelerator accelerator,
            QemuVersion version, boolean templated, QemuCapabilities caps) {
        Objects.requireNonNull(accelerator, "accelerator");
        if (accelerator == Accelerator.AUTO) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "accelerator AUTO must be resolved (AcceleratorSelector) before "
                    + "building a QEMU command line");
        }
        if (accelerator != Accelerator.TCG && hostArch != guestArch) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, accelerator.qemuName() + " cannot run a " + guestArch.qemuName()
                    + " guest on a " + hostArch.qemuName() + " host: use TCG");
        }
        if (accelerator == Accelerator.HVF && guestArch == Arch.AARCH64 && !version.atLeast(6, 2)) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "HVF on Apple silicon needs QEMU >= 6.2, this is " + version
                    + "; upgrade QEMU (brew upgrade qemu)");
        }
        String accel = accel(accelerator, hostArch, guestArch, version);
        if (guestArch == Arch.AARCH64) {
            requireMachine(caps, "virt", version);
            boolean hw = accelerator == Accelerator.KVM || accelerator == Accelerator.HVF;
            String virt = VIRT;
            if (accelerator == Accelerator.HVF && version.compareTo(VIRT_IPA_AWARE) < 0) {
                if (caps != null && !caps.machineHas("virt", "highmem")) {
                    throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "QEMU " + version
                            + " with HVF needs virt's highmem=off (before 7.0 its memory map does not fit a 36-bit "
                            + "IPA space), and this build's -machine virt,help lists no highmem: upgrade QEMU to >= 7.0");
                }
                virt = VIRT + ",highmem=off";
            }
            return new MachineProfile(virt, hw ? "host" : "max", accel, "ttyAMA0", true,
                    device(caps, "pvpanic-pci"), false);
        }
        requireMachine(caps, "q35", version);
        String q35 = caps == null ? q35(version) : q35(caps);
        Optional<String> pvpanic = device(caps, "pvpanic");
        boolean vmgenid = caps == null || caps.hasDevice("vmgenid");
        switch (accelerator) {
            case KVM:
                boolean microvm = caps == null || caps.hasMachine("microvm");
                return templated || !microvm
                        ? new MachineProfile(q35, "host", accel, "ttyS0", false, pvpanic, vmgenid)
                        : new MachineProfile(MICROVM, "host", accel, "ttyS0", true, Optional.empty(), false);
            case TCG:
                return new MachineProfile(q35, "max", accel, "ttyS0", false, pvpanic, vmgenid);
            case HVF:
                return new MachineProfile(q35, "host", accel, "ttyS0", false, pvpanic, vmgenid);
            case WHPX:
                return new MachineProfile(q35, "Nehalem", accel, "ttyS0", false, pvpanic, vmgenid);
            default:
                throw new IllegalStateException(accelerator.toString());
        }
    }

    private static Optional<String> device(QemuCapabilities caps, String name) {
        return caps == null || caps.hasDevice(name) ? Optional.of(name) : Optional.empty();
    }

    private static void requireMachine(QemuCapabilities caps, String type, QemuVersion version) {
        if (caps != null && !caps.hasMachine(type)) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_UNSUPPORTED, "this QEMU " + version
                    + " has no machine type '" + type + "' (-machine help does not list it): install a full "
                    + "qemu-system build (Debian: qemu-system-x86 / qemu-system-arm; macOS: brew install qemu)");
        }
    }

    /**
     * The {@code -accel} value. TCG runs an x86_64 guest on an x86_64 host multi-threaded (one host
     * thread per vCPU) on QEMU 10.0 ({@link #TCG_MULTI_THREADED}) and later, and single-threaded (one host
     * thread runs every vCPU in turn) everywhere else. On QEMU 7.2 multi-threaded TCG crashed the
     * worker's JVM now and then (below); on 10.0.2 {@code JitStressE2ETest
     * -Dqvm.jitstress.threading=multi} ran 8 boots of 60 s each with no crash (2026-12-03, this
     * 2-core host; 414–463 stress rounds a boot against 222–262 single-threaded on 7.2), and the
     * worker starts in about half the time. Before that measurement:
     * with multi-threaded TCG (one host thread per vCPU) the worker's JVM crashes now and then with
     * a SIGSEGV at the entry of a compiled method it has just patched (HotSpot makes a method not
     * entrant by writing a jump over its entry while other threads may be running it), the
     * cross-modifying code that the emulator's vCPU threads do not always see consistently.
     * Measured with {@code JitStressE2ETest} (two threads calling a method while both compilers
     * replace it, 60 s per boot): multi-threaded, 2 of 3 boots crashed with exactly that report;
     * single-threaded, 0 of 3, with as many rounds per boot (222–262) on this 2-core host. In the
     * hostile corpus run (83 renders) the same crash ended 3 of 13 runs. For an x86_64 guest on
     * an aarch64 host single-threaded TCG is required anyway (x86's strong memory order).
     *
     * <p>An aarch64 guest stays single-threaded too, although it boots twice as fast
     * multi-threaded (2026-12-03, QEMU 7.2, this 2-core host: its worker warm 37.5 s after its
     * start multi-threaded, 85.0 s single-threaded with 2 vCPUs): {@code JitStressE2ETest
     * -Dqvm.jitstress.arch=aarch64 -Dqvm.jitstress.threading=multi} crashed the aarch64 JVM
     * (SIGSEGV in libjvm) in 1 of its 5 multi-threaded boots (in 3 more the JVM never started), as the x86_64 one did (adr/0001). Hardware
     * accelerators run the vCPUs natively and do not have the problem. WHPX gets
     * {@code kernel-irqchip=off}: with Hyper-V's in-kernel APIC, QEMU reports
     * "whpx: injection failed, MSI … lost" and Linux guests hang (QEMU issue 346); the userspace
     * irqchip is slower on interrupts but boots. Every QEMU qvm supports (>= 6.0) has the option.
     *
     * <p>TCG's translation cache is capped at {@value #TCG_TB_MIB} MiB ({@code tb-size}; QEMU's
     * default is 1 GiB): every VM fills its own cache as it runs (a restored clone re-translates
     * what it runs), so without a cap a long-lived VM's private memory grows with the code it ever
     * ran. The cap is a trade: measured here (QEMU 7.2, TCG, the qvm image, one run each) a cold
     * boot reached the worker's warm state in 23.5 s with the default, 22.9 s at 128 MiB, 27.9 s at
     * 64 MiB and 57.2 s at 32 MiB (the JVM's warm-up thrashes a smaller cache); three cold boots to
     * READY each at 64 MiB took 34.5–37.2 s. A freshly resumed clone held 94 MiB anonymous memory
     * with the default and 62 MiB at 32 MiB. 128 MiB bounds the cache without slowing the boot.
     */
    static String accel(Accelerator a, Arch hostArch, Arch guestArch, QemuVersion version) {
        switch (a) {
            case TCG:
                boolean multi = hostArch == Arch.X86_64 && guestArch == Arch.X86_64
                        && version.compareTo(TCG_MULTI_THREADED) >= 0;
                return "tcg,thread=" + (multi ? "multi" : "single") + ",tb-size=" + TCG_TB_MIB;
            case WHPX:
                return "whpx,kernel-irqchip=off";
            default:
                return a.qemuName();
        }
    }
}
