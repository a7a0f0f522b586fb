package io.qvm.cli;

import io.qvm.HostSetupException;
import io.qvm.Accelerator;
import io.qvm.admin.GuestImages;
import io.qvm.admin.HostReport;
import io.qvm.admin.SandboxStates;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.PrivateDirectory;
import io.qvm.transport.vsock.VsockSupport;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code qvm doctor}: can this host run a sandbox, and if not, what fixes it. */
@Command(name = "doctor", sortOptions = false,
        description = {"Check this host: OS and CPU, QEMU, each accelerator's three probe layers (compiled in, "
                + "offered by the host, a guest really boots), vhost-vsock, the guest image, the state directory, and "
                + "which confinements QEMU runs under here (seccomp, an unprivileged user, a cgroup, a bounded "
                + "translation cache, a minimal environment, Yama's ptrace_scope). Every problem comes with its fix.",
            "Exits 3 when this host cannot run a sandbox, 8 when only the image is missing or damaged."},
        footer = {"", "JSON (--json), schema qvm.doctor/1:",
            "  {\"schema\":\"qvm.doctor/1\", \"ok\", \"verdict\", \"host\":{\"os\", \"osName\", \"osVersion\", \"arch\", \"java\", \"rosetta\"},",
            "   \"qemu\":[{\"arch\", \"found\", \"binary\", \"version\", \"compiledIn\":[...], \"fix\"}],",
            "   \"accelerators\":[{\"name\", \"usable\", \"layers\":[{\"layer\", \"status\", \"reason\", \"fix\", \"cached\"}]}],",
            "   \"autoChoice\", \"vsock\":{\"usable\", \"reason\"},",
            "   \"image\":{\"dir\", \"present\", \"verified\", \"kernelVersion\", \"problem\", \"fix\"},",
            "   \"stateDirectory\":{\"dir\", \"writable\", \"sandboxes\", \"runtimeDir\", \"problem\"},",
            "   \"confinement\":[{\"name\":\"seccomp|unprivileged|cgroup|tb-size|environment|ptrace\", \"status\", \"detail\"}],",
            "   \"problems\":[{\"severity\":\"error|warning\", \"what\", \"fix\"}]}",
            "layer status: passed, failed, skipped (--quick), not-checked (an earlier layer failed).",
            "confinement status: active, inactive (the host does not allow it; detail says why), not-needed."})
final class DoctorCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    JsonOption json;

    @Mixin
    DirOptions dirs;

    @Option(names = "--quick", description = "Skip the functional probes (booting a guest per accelerator).")
    boolean quick;

    @Option(names = "--no-cache", description = "Ignore cached functional probe verdicts (boot again).")
    boolean noCache;

    private final CliContext ctx;

    DoctorCommand(CliContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public Integer call() {
        List<Problem> problems = new ArrayList<>();
        String osName = System.getProperty("os.name", "");
        HostReport.Os os = HostReport.Os.of(osName);
        Optional<Arch> hostArch = Arch.fromOsArch(System.getProperty("os.arch", ""));
        boolean hostOk = true;
        if (hostArch.isEmpty()) {
            problems.add(new Problem("error", "unsupported CPU architecture " + System.getProperty("os.arch"),
                    "run qvm on an x86_64 or aarch64 host"));
            hostOk = false;
        }
        Path imageRoot = ctx.imageRoot(dirs.imageDir);
        HostReport report = HostReport.probe(new HostReport.Options(ctx.env(), Optional.of(imageRoot), !quick, !noCache));
        if (report.probeFailure().isPresent()) {
            problems.add(new Problem("error", report.probeFailure().get(),
                    hostArch.map(a -> InstallHints.qemu(os, a)).orElse("")));
            hostOk = false;
        }
        boolean probed = report.probeFailure().isEmpty();
        Optional<Problem> rosetta = rosetta(report.rosetta());
        if (rosetta.isPresent()) {
            problems.add(rosetta.get());
            hostOk = false;
        }
        Host host = new Host(os.name().toLowerCase(java.util.Locale.ROOT), osName, System.getProperty("os.version", ""),
                hostArch.map(Arch::qemuName).orElse(System.getProperty("os.arch")), Runtime.version().toString(),
                rosetta.isPresent());
        List<QemuEntry> qemu = new ArrayList<>();
        for (Arch a : Arch.values()) {
            Optional<HostReport.Qemu> q = report.qemu(a);
            String fix = q.isPresent() ? null : InstallHints.qemu(os, a);
            qemu.add(new QemuEntry(a.qemuName(), q.isPresent(), q.map(i -> i.binary().toString()).orElse(null),
                    q.map(HostReport.Qemu::version).orElse(null),
                    q.map(i -> i.compiledIn().stream().map(Accelerator::qemuName).sorted().toList()).orElse(List.of()),
                    fix));
            if (q.isEmpty() && hostArch.isPresent() && a == hostArch.get() && probed) {
                problems.add(new Problem("error", "no qemu-system-" + a.qemuName() + " found", fix));
                hostOk = false;
            }
        }

        ImageEntry image = image(imageRoot, hostArch.orElse(Arch.X86_64), problems);

        List<AccelEntry> accels = new ArrayList<>();
        for (HostReport.AcceleratorReport a : report.accelerators()) {
            accels.add(new AccelEntry(a.accelerator().qemuName(), a.usable(), a.layers().stream()
                    .map(l -> new LayerEntry(l.layer(), l.status().label(), l.status() == HostReport.Status.SKIPPED
                            ? "--quick: " + l.reason() : emptyToNull(l.reason()), emptyToNull(l.fix()), l.cached()))
                    .toList()));
        }
        String autoChoice = report.autoChoice().map(Accelerator::qemuName).orElse(null);
        if (!accels.isEmpty() && !report.rosetta() && autoChoice == null) {
            AccelEntry tcg = accels.get(accels.size() - 1);
            problems.add(new Problem("error", "no accelerator works, not even TCG: " + tcg.layers().stream()
                    .filter(l -> l.status().equals("failed")).map(LayerEntry::reason).findFirst().orElse("?"),
                    tcg.layers().stream().map(LayerEntry::fix).filter(f -> f != null && !f.isEmpty()).findFirst()
                            .orElse("reinstall QEMU")));
            hostOk = false;
        } else if ("tcg".equals(autoChoice)) {
            report.nativeAccelerator().flatMap(n -> accels.stream().filter(x -> x.name().equals(n.qemuName())).findFirst())
                    .ifPresent(n -> n.layers().stream().filter(l -> l.status().equals("failed")).findFirst()
                            .ifPresent(l -> problems.add(new Problem("warning", n.name() + " is not usable (" + l.layer()
                                    + ": " + l.reason() + "); sandboxes fall back to TCG, roughly 10x slower", l.fix()))));
        }

        VsockSupport.Verdict v;
        try {
            v = VsockSupport.probe();
        } catch (Throwable t) {
            v = new VsockSupport.Verdict(false, "vsock probe failed: " + t);
        }
        Vsock vsock = new Vsock(v.usable(), v.reason());

        StateEntry state = state(problems);
        if (state.problem() != null) {
            hostOk = false;
        }
        List<ConfinementEntry> confinement = new ArrayList<>();
        for (HostReport.Confinement c : report.confinement()) {
            confinement.add(new ConfinementEntry(c.name(), c.status(), c.detail()));
            c.problem().ifPresent(p -> problems.add(new Problem("error", p, c.fix().orElse(null))));
        }
        confinement.add(ptraceScope(os, PTRACE_SCOPE, problems));
        if (confinement.stream().anyMatch(c -> c.name().equals("unprivileged") && c.status().equals("inactive"))) {
            hostOk = false; // as root with no user for QEMU, no sandbox starts
        }
        boolean ok = hostOk && image.verified();
        String verdict = ok ? "this host can run sandboxes (accelerator " + autoChoice + ")"
                : hostOk ? "this host can run sandboxes once the guest image is built"
                : "this host cannot run sandboxes: fix the errors below";
        DoctorReport out = new DoctorReport("qvm.doctor/1", ok, verdict, host, qemu, accels, autoChoice, vsock,
                image, state, confinement, problems);
        Output.emit(spec.commandLine().getOut(), out, json.enabled());
        return ok ? ExitCode.OK.code() : hostOk ? ExitCode.IMAGE.code() : ExitCode.HOST.code();
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    private static ImageEntry image(Path root, Arch arch, List<Problem> problems) {
        Path dir = root.resolve(arch.qemuName());
        String fix = InstallHints.imageBuild(arch);
        boolean present = Files.isDirectory(dir);
        try {
            GuestImages.Image img = GuestImages.verify(root, arch);
            return new ImageEntry(dir.toString(), true, true, img.kernelVersion().orElse(null), null, null);
        } catch (HostSetupException e) {
            problems.add(new Problem("error", e.getMessage(), fix));
            return new ImageEntry(dir.toString(), present, false, null, e.getMessage(), fix);
        }
    }

    private StateEntry state(List<Problem> problems) {
        Path root = ctx.stateRoot(dirs.stateDir);
        String problem = null;
        int count = 0;
        try {
            PrivateDirectory.ensure(root); // as the backend makes it: 0700, an existing one must be ours and 0700
            Path probe = Files.createTempFile(root, ".doctor", ".tmp");
            Files.delete(probe);
            count = SandboxStates.at(root).list().size();
        } catch (IOException | RuntimeException e) {
            problem = "the state directory " + root + " is not usable: " + e.getMessage();
            problems.add(new Problem("error", problem, "fix it as the message says (qvm never changes an existing "
                    + "directory), or set QVM_STATE (or --state-dir) to a directory of its own"));
        }
        Path runtime = SandboxStates.defaultRuntimeRoot();
        try {
            SandboxStates.checkRuntimeRoot(runtime);
        } catch (IllegalArgumentException e) {
            problem = e.getMessage();
            problems.add(new Problem("error", problem, "set QVM_RUNTIME_DIR to a short directory, e.g. /tmp/qvm"));
        }
        return new StateEntry(root.toString(), problem == null, count, runtime.toString(), problem);
    }

    /** Yama's setting: who may ptrace (attach to, read the memory of) another process. */
    static final Path PTRACE_SCOPE = Path.of("/proc/sys/kernel/yama/ptrace_scope");

    /**
     * Who can attach to QEMU with ptrace, from Yama's {@code ptrace_scope} in {@code file}: at 0
     * (or without Yama) any process of QEMU's uid can, and every sandbox's QEMU runs as the same
     * user, so one QEMU taken over by its guest could read and steer the others. A warning, not
     * an error: a sandbox still runs.
     */
    static ConfinementEntry ptraceScope(HostReport.Os os, Path file, List<Problem> problems) {
        if (os != HostReport.Os.LINUX) {
            return new ConfinementEntry("ptrace", "not-needed", "Yama's ptrace_scope is Linux's; not checked on " + os);
        }
        String fix = "sudo sysctl -w kernel.yama.ptrace_scope=1, and put kernel.yama.ptrace_scope = 1 in "
                + "/etc/sysctl.d/10-ptrace.conf to keep it";
        String value;
        try {
            value = Files.readString(file).strip();
        } catch (java.nio.file.NoSuchFileException e) {
            String what = "Yama is not enabled in this kernel (no " + file + "): any process running as QEMU's user "
                    + "can ptrace QEMU, so one sandbox's QEMU taken over by its guest could attach to the others";
            problems.add(new Problem("warning", what, "boot a kernel with Yama (CONFIG_SECURITY_YAMA, \"yama\" in "
                    + "the lsm= boot parameter), then set kernel.yama.ptrace_scope=1"));
            return new ConfinementEntry("ptrace", "inactive", what);
        } catch (IOException e) {
            return new ConfinementEntry("ptrace", "inactive", "cannot read " + file + ": " + e.getMessage());
        }
        String meaning = switch (value) {
            case "1" -> "restricted: a process may ptrace only its own descendants, so sandboxes' QEMUs (siblings "
                    + "under the same user) cannot attach to each other";
            case "2" -> "admin-only: only a process with CAP_SYS_PTRACE may ptrace";
            case "3" -> "no attach: no process may ptrace (fixed until the next boot)";
            default -> null;
        };
        if (meaning != null) {
            return new ConfinementEntry("ptrace", "active", "kernel.yama.ptrace_scope = " + value + ", " + meaning);
        }
        String what = "kernel.yama.ptrace_scope = " + value + (value.equals("0") ? ", classic: any process running as "
                + "QEMU's user can ptrace QEMU (read and change its memory, the guest's included), so one sandbox's QEMU "
                + "taken over by its guest could attach to the others; 1 or higher stops that"
                : ", not a value Yama knows (0-3)");
        problems.add(new Problem("warning", what, fix));
        return new ConfinementEntry("ptrace", "inactive", what);
    }

    record ConfinementEntry(String name, String status, String detail) {
    }

    /** @param rosetta this JVM is an x86_64 process under Rosetta 2 on an arm64 Mac (refused: {@link #rosetta}) */
    record Host(String os, String osName, String osVersion, String arch, String java, boolean rosetta) {
    }

    /**
     * The error for a JVM under Rosetta 2 ({@link HostReport#rosetta()}): sandboxes with
     * accelerator AUTO are refused there, so the host counts as unfit until an arm64 JDK runs qvm.
     */
    static Optional<Problem> rosetta(boolean translated) {
        if (!translated) {
            return Optional.empty();
        }
        return Optional.of(new Problem("error", HostReport.describeRosetta() + ": qvm would run the x86_64 guest under "
                + "TCG emulation (HVF runs arm64 guests only on this Mac), roughly 10x slower, so accelerator AUTO is "
                + "refused", HostReport.ROSETTA_FIX));
    }

    record QemuEntry(String arch, boolean found, String binary, String version, List<String> compiledIn, String fix) {
    }

    record LayerEntry(String layer, String status, String reason, String fix, boolean cached) {
    }

    record AccelEntry(String name, boolean usable, List<LayerEntry> layers) {
    }

    record Vsock(boolean usable, String reason) {
    }

    record ImageEntry(String dir, boolean present, boolean verified, String kernelVersion, String problem, String fix) {
    }

    record StateEntry(String dir, boolean writable, int sandboxes, String runtimeDir, String problem) {
    }

    record Problem(String severity, String what, String fix) {
    }

    /** {@code qvm doctor} — schema {@code qvm.doctor/1}. */
    record DoctorReport(String schema, boolean ok, String verdict, Host host, List<QemuEntry> qemu,
            List<AccelEntry> accelerators, String autoChoice, Vsock vsock, ImageEntry image, StateEntry stateDirectory,
            List<ConfinementEntry> confinement, List<Problem> problems) implements Report {

        @Override
        public void printText(PrintWriter out) {
            out.printf("host     %s %s (%s), %s, Java %s%n", host.osName(), host.osVersion(), host.os(), host.arch(),
                    host.java());
            for (QemuEntry q : qemu) {
                out.printf("qemu     %-8s %s%n", q.arch(), q.found() ? q.binary() + " " + q.version() + " (accelerators: "
                        + String.join(", ", q.compiledIn()) + ")" : "not found — " + q.fix());
            }
            for (AccelEntry a : accelerators) {
                out.printf("accel    %-5s %s%n", a.name(), a.usable() ? "usable" : "not usable");
                for (LayerEntry l : a.layers()) {
                    out.printf("           %-13s %-11s %s%s%n", l.layer(), l.status(), l.reason() == null ? "" : l.reason(),
                            l.cached() ? " [cached]" : "");
                    if (l.fix() != null && l.status().equals("failed")) {
                        out.printf("           %-13s %-11s fix: %s%n", "", "", l.fix());
                    }
                }
            }
            if (autoChoice != null) {
                out.println("auto     sandboxes run on " + autoChoice);
            }
            out.println("vsock    " + (vsock.usable() ? "usable" : "not usable") + ": " + vsock.reason()
                    + (vsock.usable() ? "" : " (virtio-serial is used instead)"));
            out.println("image    " + image.dir() + ": " + (image.verified() ? "verified, kernel " + image.kernelVersion()
                    : image.present() ? "DOES NOT VERIFY" : "missing"));
            out.println("state    " + stateDirectory.dir() + (stateDirectory.writable() ? " (writable, "
                    + stateDirectory.sandboxes() + " sandboxes)" : " (NOT usable)") + "; sockets under "
                    + stateDirectory.runtimeDir());
            for (ConfinementEntry c : confinement) {
                out.printf("confine  %-12s %-10s %s%n", c.name(), c.status(), c.detail());
            }
            for (Problem p : problems) {
                out.println(p.severity() + ": " + p.what());
                if (p.fix() != null && !p.fix().isEmpty()) {
                    out.println("  fix: " + p.fix());
                }
            }
            out.println(verdict);
        }
    }
}
