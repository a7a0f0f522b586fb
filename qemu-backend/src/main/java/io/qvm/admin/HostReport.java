package io.qvm.admin;

import io.qvm.Accelerator;
import io.qvm.HostSetupException;
import io.qvm.SandboxException;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.image.GuestImage;
import io.qvm.internal.probe.AcceleratorCheck;
import io.qvm.internal.probe.AcceleratorSelector;
import io.qvm.internal.probe.CompiledInCheck;
import io.qvm.internal.probe.FunctionalCheck;
import io.qvm.internal.probe.HostInfo;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.probe.HostSupportCheck;
import io.qvm.internal.probe.Layer;
import io.qvm.internal.probe.LayerVerdict;
import io.qvm.internal.probe.ProbeCache;
import io.qvm.internal.probe.ProbeGuest;
import io.qvm.internal.probe.Rosetta;
import io.qvm.internal.process.CgroupTree;
import io.qvm.internal.process.ChildEnvironment;
import io.qvm.internal.process.QemuUser;
import io.qvm.internal.qemu.MachineProfile;
import io.qvm.internal.qemu.QemuCommand;
import io.qvm.protocol.image.Arch;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Whether this host can run a sandbox, as {@code qvm doctor} reports it: the QEMU binaries found,
 * each accelerator's three probe layers (compiled into QEMU, offered by the host, a guest really
 * boots), the accelerator {@link Accelerator#AUTO} would choose, and what confines QEMU here.
 *
 * <pre>{@code
 * HostReport r = HostReport.probe(HostReport.Options.defaults());
 * r.autoChoice().ifPresentOrElse(a -> System.out.println("sandboxes run on " + a),
 *         () -> System.out.println("no usable accelerator: " + r.accelerators()));
 * }</pre>
 *
 * @param os the host's operating system
 * @param arch the host's CPU architecture (empty: not one qvm runs on)
 * @param rosetta this JVM is an x86_64 process under Rosetta 2 on an arm64 Mac: {@code AUTO} is refused
 * @param probeFailure why the host could not be probed at all (then nothing else was checked)
 * @param qemu the {@code qemu-system-*} binaries found, one per guest architecture
 * @param accelerators KVM, HVF, WHPX and TCG with their layers (empty when the host's QEMU is missing)
 * @param nativeAccelerator the hardware accelerator of this OS, if it has one
 * @param autoChoice what {@code AUTO} picks: the native accelerator if usable, else TCG if usable
 * @param confinement what confines QEMU here (seccomp, an unprivileged user, a cgroup, a bounded
 *     translation cache, a minimal environment)
 */
public record HostReport(Os os, Optional<Arch> arch, boolean rosetta, Optional<String> probeFailure, List<Qemu> qemu,
        List<AcceleratorReport> accelerators, Optional<Accelerator> nativeAccelerator, Optional<Accelerator> autoChoice,
        List<Confinement> confinement) {

    public HostReport {
        Objects.requireNonNull(os, "os");
        Objects.requireNonNull(arch, "arch");
        Objects.requireNonNull(probeFailure, "probeFailure");
        qemu = List.copyOf(qemu);
        accelerators = List.copyOf(accelerators);
        Objects.requireNonNull(nativeAccelerator, "nativeAccelerator");
        Objects.requireNonNull(autoChoice, "autoChoice");
        confinement = List.copyOf(confinement);
    }

    /** What to do about a JVM under Rosetta 2 (see {@link #rosetta}). */
    public static final String ROSETTA_FIX = Rosetta.FIX;

    /** The operating systems qvm tells apart. */
    public enum Os {
        LINUX, MACOS, WINDOWS, OTHER;

        /** The OS {@code os.name} names ({@code Linux}, {@code Mac OS X}, {@code Windows 11}, ...). */
        public static Os of(String osName) {
            return valueOf(HostOs.fromOsName(osName).name());
        }

        /** This JVM's OS. */
        public static Os current() {
            return of(System.getProperty("os.name", ""));
        }
    }

    /** One {@code qemu-system-<arch>} found on this host. */
    public record Qemu(Arch guestArch, Path binary, String version, List<Accelerator> compiledIn) {
        public Qemu {
            compiledIn = List.copyOf(compiledIn);
        }
    }

    /** How far a probe layer got. */
    public enum Status {
        PASSED, FAILED,
        /** Not run on request (no functional probe). */
        SKIPPED,
        /** An earlier layer failed. */
        NOT_CHECKED;

        /** {@code passed}, {@code failed}, {@code skipped}, {@code not-checked}. */
        public String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    /** One layer of one accelerator's probe; {@code reason} and {@code fix} may be empty. */
    public record LayerResult(String layer, Status status, String reason, String fix, boolean cached) {
    }

    /** One accelerator: usable when every layer passed. */
    public record AcceleratorReport(Accelerator accelerator, boolean usable, List<LayerResult> layers) {
        public AcceleratorReport {
            layers = List.copyOf(layers);
        }
    }

    /**
     * One thing that confines QEMU here.
     *
     * @param name {@code seccomp}, {@code unprivileged}, {@code cgroup}, {@code tb-size} or {@code environment}
     * @param status {@code active}, {@code inactive} (the host does not allow it) or {@code not-needed}
     * @param problem what is wrong when no sandbox can start because of it
     * @param fix how to fix that
     */
    public record Confinement(String name, String status, String detail, Optional<String> problem,
            Optional<String> fix) {
        public Confinement(String name, String status, String detail) {
            this(name, status, detail, Optional.empty(), Optional.empty());
        }
    }

    /** What to probe and how. */
    public record Options(Map<String, String> env, Optional<Path> imageRoot, boolean functional, boolean useCache) {
        public Options {
            env = Map.copyOf(env);
            Objects.requireNonNull(imageRoot, "imageRoot");
        }

        /** This process's environment, no image, the functional probes on, the probe cache used. */
        public static Options defaults() {
            return new Options(System.getenv(), Optional.empty(), true, true);
        }

        /** A guest image directory root: when it verifies, the functional probe boots its kernel. */
        public Options withImageRoot(Path root) {
            return new Options(env, Optional.of(root), functional, useCache);
        }

        public Options withFunctional(boolean on) {
            return new Options(env, imageRoot, on, useCache);
        }

        public Options withCache(boolean use) {
            return new Options(env, imageRoot, functional, use);
        }

        public Options withEnv(Map<String, String> newEnv) {
            return new Options(newEnv, imageRoot, functional, useCache);
        }
    }

    /** Probes this host; a functional probe boots a guest per accelerator (seconds each, cached per host). */
    public static HostReport probe(Options options) {
        Os os = Os.current();
        Optional<Arch> hostArch = Arch.fromOsArch(System.getProperty("os.arch", ""));
        HostInfo info = null;
        Optional<String> failure = Optional.empty();
        try {
            info = HostProbe.system().probe();
        } catch (SandboxException e) {
            failure = Optional.of(e.getMessage());
        }
        List<Qemu> qemu = info == null ? List.of() : qemus(info);
        QvmEnvironment env = QvmEnvironment.of(options.env());
        List<AcceleratorReport> accels = new ArrayList<>();
        Optional<Accelerator> nat = AcceleratorSelector.nativeFor(HostOs.valueOf(os.name()));
        Optional<Accelerator> auto = Optional.empty();
        if (info != null && info.qemu(info.arch()).isPresent()) {
            ProbeGuest guest = new ProbeGuest.BootSectorGuest();
            if (options.imageRoot().isPresent()) {
                try {
                    guest = new ProbeGuest.KernelGuest(GuestImage.load(options.imageRoot().get(), info.arch()).kernel(),
                            Optional.empty());
                } catch (HostSetupException e) {
                    // no verified image: the boot-sector guest proves the accelerator as well
                }
            }
            AcceleratorCheck[] layers = {new CompiledInCheck(), HostSupportCheck.system(options.env()),
                !options.functional() ? null : new FunctionalCheck(guest, Duration.ofSeconds(20), Duration.ofSeconds(90),
                        options.useCache() ? ProbeCache.defaultLocation(options.env()) : null, probeUser(env))};
            for (Accelerator a : new Accelerator[] {Accelerator.KVM, Accelerator.HVF, Accelerator.WHPX, Accelerator.TCG}) {
                accels.add(evaluate(a, info, layers));
            }
            Optional<AcceleratorReport> natEntry = nat.flatMap(n -> accels.stream()
                    .filter(x -> x.accelerator() == n).findFirst());
            AcceleratorReport tcg = accels.get(accels.size() - 1);
            if (info.rosetta()) {
                auto = Optional.empty(); // refused: an x86_64 guest under TCG on an arm64 Mac
            } else if (natEntry.isPresent() && natEntry.get().usable()) {
                auto = nat;
            } else if (tcg.usable()) {
                auto = Optional.of(Accelerator.TCG);
            }
        }
        return new HostReport(os, hostArch, info != null && info.rosetta(), failure, qemu, accels, nat, auto,
                confinement(os, env, auto));
    }

    /**
     * The {@code qemu-system-*} binaries of this host ({@code $QVM_QEMU}, else the PATH), one per
     * guest architecture, without probing any accelerator.
     *
     * @throws SandboxException the host cannot be probed (an unsupported OS or CPU)
     */
    public static List<Qemu> findQemu() {
        return qemus(HostProbe.system().probe());
    }

    private static List<Qemu> qemus(HostInfo info) {
        List<Qemu> qemu = new ArrayList<>();
        for (Arch a : Arch.values()) {
            info.qemu(a).ifPresent(i -> qemu.add(new Qemu(a, i.binary(), i.version().toString(),
                    i.compiledIn().stream().sorted().toList())));
        }
        return qemu;
    }

    /** Why an x86_64 JVM under Rosetta 2 is refused, in a few words. */
    public static String describeRosetta() {
        return Rosetta.describe();
    }

    /** The host's QEMU for {@code guest}, if found. */
    public Optional<Qemu> qemu(Arch guest) {
        return qemu.stream().filter(q -> q.guestArch() == guest).findFirst();
    }

    private static AcceleratorReport evaluate(Accelerator a, HostInfo info, AcceleratorCheck[] layers) {
        List<LayerResult> out = new ArrayList<>();
        boolean failed = false;
        Layer[] names = {Layer.COMPILED_IN, Layer.HOST_SUPPORT, Layer.FUNCTIONAL};
        for (int i = 0; i < layers.length; i++) {
            if (failed) {
                out.add(new LayerResult(names[i].label(), Status.NOT_CHECKED, "", "", false));
            } else if (layers[i] == null) {
                out.add(new LayerResult(names[i].label(), Status.SKIPPED, "no guest was booted", "", false));
            } else {
                LayerVerdict v;
                try {
                    v = layers[i].check(a, info, info.arch());
                } catch (RuntimeException e) {
                    v = LayerVerdict.fail(a, names[i], "the probe failed: " + e.getMessage(), "");
                }
                out.add(new LayerResult(v.layer().label(), v.passed() ? Status.PASSED : Status.FAILED, v.reason(),
                        v.fix(), v.cached()));
                failed = !v.passed();
            }
        }
        return new AcceleratorReport(a, !failed, out);
    }

    /** The user the probe QEMU drops to, as a sandbox's would (none when there is none to drop to). */
    private static Optional<String> probeUser(QvmEnvironment env) {
        try {
            return QemuUser.system(env).dropTo().map(QemuUser.Account::name);
        } catch (HostSetupException e) {
            return Optional.empty();
        }
    }

    /**
     * What confines QEMU on this host, as a sandbox started now would run: its seccomp filter, the
     * user it runs as, its cgroup, TCG's translation cache cap, its environment.
     */
    private static List<Confinement> confinement(Os os, QvmEnvironment env, Optional<Accelerator> auto) {
        List<Confinement> out = new ArrayList<>();
        QemuUser user = QemuUser.system(env);
        boolean drops = false;
        try {
            drops = user.dropTo().isPresent();
            out.add(new Confinement("unprivileged", "active", user.describe()));
        } catch (HostSetupException e) {
            out.add(new Confinement("unprivileged", "inactive", e.getMessage(), Optional.of("QEMU would run as root: "
                    + "there is no user '" + user.wantedUser() + "' to drop to"), Optional.of(user.createCommand())));
        }
        out.add(0, os == Os.LINUX
                ? new Confinement("seccomp", "active", "QEMU's filter: -sandbox "
                        + (drops ? QemuCommand.SECCOMP_RUNAS + " (set*id allowed for its own drop)" : QemuCommand.SECCOMP))
                : new Confinement("seccomp", "inactive", "QEMU has no seccomp filter on " + os));
        CgroupTree.Availability cg = CgroupTree.system().availability();
        out.add(new Confinement("cgroup", cg.usable() ? "active" : "inactive", cg.detail()));
        String choice = auto.map(Accelerator::qemuName).orElse(null);
        out.add("tcg".equals(choice)
                ? new Confinement("tb-size", "active", "TCG's translation cache is capped at "
                        + MachineProfile.TCG_TB_MIB + " MiB per QEMU (QEMU's default: 1 GiB)")
                : new Confinement("tb-size", choice == null ? "inactive" : "not-needed", choice == null
                        ? "no accelerator chosen yet" : choice + " runs guest code natively: no translation cache"));
        out.add(new Confinement("environment", "active", "QEMU gets " + String.join(" ", ChildEnvironment.forQemu()
                .entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList())
                + " and nothing else of the host's environment"));
        return out;
    }
}
