package io.qvm.internal.probe;

import io.qvm.internal.host.QemuInstallation;
import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import io.qvm.Accelerator;
import io.qvm.internal.qemu.MachineProfile;
import io.qvm.protocol.util.FileTrees;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Layer 3: boot a small guest with the accelerator and wait for a marker on its serial console,
 * within a deadline. The only layer that can tell "KVM initialises" from "KVM runs a guest":
 * on this project's build machines {@code /dev/kvm} is read-write and QEMU starts, but a Linux
 * guest hangs after "Probing EDD" (FINDINGS), so only a boot proves anything.
 *
 * <p>The guest runs on the same machine type, CPU model and accelerator options as the sandbox
 * ({@link MachineProfile}), so what passes here is what the sandbox boots. The probe QEMU is
 * always killed (marker seen, deadline, or error) before {@link #check} returns. Verdicts are
 * cached in a {@link ProbeCache} unless the cache is {@code null} (bypass).
 */
public final class FunctionalCheck implements AcceleratorCheck {

    private static final System.Logger LOG = System.getLogger(FunctionalCheck.class.getName());
    private static final int TAIL_CHARS = 2000;

    private final ProbeGuest guest;
    private final Duration hardwareDeadline;
    private final Duration tcgDeadline;
    private final ProbeCache cache;
    private final Optional<String> runAs;

    /**
     * @param guest            what to boot
     * @param hardwareDeadline for KVM, HVF, WHPX (which boot in well under a second when they work)
     * @param tcgDeadline      for TCG (a kernel reaches its marker in ~2–3 s here when the machine is idle)
     * @param cache            verdict cache, or {@code null} to always probe
     */
    public FunctionalCheck(ProbeGuest guest, Duration hardwareDeadline, Duration tcgDeadline, ProbeCache cache) {
        this(guest, hardwareDeadline, tcgDeadline, cache, Optional.empty());
    }

    /**
     * As above, the probe QEMU dropping to {@code runAs} after its setup ({@code -runas}), as a
     * sandbox's does when this process is root ({@code io.qvm.internal.process.QemuUser}).
     */
    public FunctionalCheck(ProbeGuest guest, Duration hardwareDeadline, Duration tcgDeadline, ProbeCache cache,
            Optional<String> runAs) {
        this.guest = Objects.requireNonNull(guest, "guest");
        this.hardwareDeadline = hardwareDeadline;
        this.tcgDeadline = tcgDeadline;
        this.cache = cache;
        this.runAs = Objects.requireNonNull(runAs, "runAs");
    }

    /** The guest this check boots. */
    public ProbeGuest guest() {
        return guest;
    }

    @Override
    public LayerVerdict check(Accelerator a, HostInfo host, Arch guestArch) {
        var qemu = host.qemu(guestArch);
        if (qemu.isEmpty()) {
            return LayerVerdict.fail(a, Layer.FUNCTIONAL, "no qemu-system-" + guestArch.qemuName(),
                    QemuLocator.installHint(host.os(), guestArch));
        }
        MachineProfile profile;
        try {
            profile = MachineProfile.select(host.os(), host.arch(), guestArch, a, qemu.get().version(), false,
                    qemu.get().capabilities());
        } catch (HostSetupException e) {
            return LayerVerdict.fail(a, Layer.FUNCTIONAL, e.getMessage(), "use TCG");
        }
        String key = cacheKey(host, qemu.get(), profile, guestArch);
        if (cache != null) {
            var hit = cache.get(key);
            if (hit.isPresent()) {
                return hit.get();
            }
        }
        LayerVerdict v = probe(a, qemu.get(), profile, guestArch);
        // A hardware accelerator's verdict is a property of the host: cache it either way. A TCG
        // failure is not cached: software emulation does not stop working, it only gets slow on
        // a loaded host, and a cached miss would refuse every boot for days.
        if (cache != null && (v.passed() || a != Accelerator.TCG)) {
            cache.put(key, v);
        }
        return v;
    }

    /** The cache key: host, kernel release, QEMU binary and version, machine profile, guest. */
    String cacheKey(HostInfo host, QemuInstallation qemu, MachineProfile p, Arch guestArch) {
        return String.join("|", hostName(), host.os().name(), System.getProperty("os.version", "?"),
                host.arch().qemuName(), qemu.binary().toString(), qemu.version().toString(), p.machine(), p.cpu(),
                p.accel(), guestArch.qemuName(), guest.cacheKey());
    }

    private LayerVerdict probe(Accelerator a, QemuInstallation qemu, MachineProfile profile, Arch guestArch) {
        Duration deadline = a == Accelerator.TCG ? tcgDeadline : hardwareDeadline;
        Path work = null;
        try {
            work = Files.createTempDirectory("qvm-probe");
            List<String> argv = new ArrayList<>();
            argv.add(qemu.binary().toString());
            argv.addAll(guest.qemuArgs(profile, guestArch, work));
            runAs.ifPresent(u -> argv.addAll(List.of(qemu.version().atLeast(9, 1) ? "-run-with" : "-runas",
                    qemu.version().atLeast(9, 1) ? "user=" + u : u)));
            LOG.log(System.Logger.Level.INFO, "qvm: probing " + a.qemuName() + " by booting " + guest.describe()
                    + " (deadline " + deadline.toSeconds() + " s): " + String.join(" ", argv));
            Run run = run(argv, guest.markers(), deadline);
            return verdict(a, run, deadline);
        } catch (IOException | UncheckedIOException e) {
            return LayerVerdict.fail(a, Layer.FUNCTIONAL, "cannot run the probe: " + e.getMessage(),
                    "check that " + qemu.binary() + " runs and the temporary directory is writable");
        } finally {
            FileTrees.deleteQuietly(work);
        }
    }

    private LayerVerdict verdict(Accelerator a, Run run, Duration deadline) {
        String weak = guest instanceof ProbeGuest.BootSectorGuest ? " [boot-sector probe]" : "";
        switch (run.outcome) {
            case MARKER:
                return LayerVerdict.pass(a, Layer.FUNCTIONAL, "guest printed '" + run.marker + "' after "
                        + run.elapsed.toMillis() + " ms" + weak);
            case TIMEOUT:
                return LayerVerdict.fail(a, Layer.FUNCTIONAL, "guest did not reach its marker within "
                        + deadline.toSeconds() + " s (QEMU killed); console tail: " + oneLine(run.tail) + weak,
                        fixFor(a));
            default:
                return LayerVerdict.fail(a, Layer.FUNCTIONAL, "QEMU exited with status " + run.exitCode + " after "
                        + run.elapsed.toMillis() + " ms before the marker; output tail: " + oneLine(run.tail) + weak,
                        fixFor(a));
        }
    }

    private static String fixFor(Accelerator a) {
        switch (a) {
            case KVM:
                return "KVM is present but does not run this guest (typical of nested virtualization): use TCG, "
                        + "or enable proper nested virtualization on the outer hypervisor";
            case HVF:
                return "check that this QEMU is signed with the com.apple.security.hypervisor entitlement "
                        + "(Homebrew's is), or use TCG";
            case WHPX:
                return "enable Windows Hypervisor Platform and virtualization in the firmware, reboot; or use TCG";
            default:
                return "TCG itself failed: check the kernel image and the QEMU installation";
        }
    }

    enum Outcome { MARKER, EXITED, TIMEOUT }

    record Run(Outcome outcome, String marker, int exitCode, Duration elapsed, String tail) { }

    /** Starts QEMU, watches its merged output for a marker, and always kills it. */
    static Run run(List<String> argv, List<String> markers, Duration deadline) throws IOException {
        long start = System.nanoTime();
        ProcessBuilder pb = new ProcessBuilder(argv).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.PIPE);
        pb.environment().clear(); // QEMU gets what the sandbox's QEMU gets, not the host's environment
        pb.environment().putAll(io.qvm.internal.process.ChildEnvironment.forQemu());
        Process p = pb.start();
        StringBuilder out = new StringBuilder();
        Thread reader = new Thread(() -> pump(p.getInputStream(), out), "qvm-probe-console");
        reader.setDaemon(true);
        reader.start();
        try {
            long end = start + deadline.toNanos();
            while (true) {
                String found = find(out, markers);
                if (found != null) {
                    return new Run(Outcome.MARKER, found, 0, since(start), tail(out));
                }
                if (!p.isAlive()) {
                    reader.join(1000);
                    found = find(out, markers);
                    if (found != null) {
                        return new Run(Outcome.MARKER, found, 0, since(start), tail(out));
                    }
                    return new Run(Outcome.EXITED, null, p.exitValue(), since(start), tail(out));
                }
                if (System.nanoTime() - end > 0) {
                    return new Run(Outcome.TIMEOUT, null, -1, since(start), tail(out));
                }
                Thread.sleep(25);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Run(Outcome.TIMEOUT, null, -1, since(start), tail(out));
        } finally {
            p.destroyForcibly();
            try {
                p.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static void pump(InputStream in, StringBuilder out) {
        byte[] buf = new byte[4096];
        try (in) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                synchronized (out) {
                    out.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                    if (out.length() > 256 * 1024) {
                        out.delete(0, out.length() - 128 * 1024);
                    }
                }
            }
        } catch (IOException ignored) {
            // QEMU was killed
        }
    }

    private static String find(StringBuilder out, List<String> markers) {
        synchronized (out) {
            for (String m : markers) {
                if (out.indexOf(m) >= 0) {
                    return m;
                }
            }
        }
        return null;
    }

    private static String tail(StringBuilder out) {
        synchronized (out) {
            return out.substring(Math.max(0, out.length() - TAIL_CHARS));
        }
    }

    private static String oneLine(String s) {
        String t = s.replace('\r', ' ').replaceAll("\\s*\n\\s*", " | ").strip();
        if (t.length() > 400) {
            t = "…" + t.substring(t.length() - 400);
        }
        return t.isEmpty() ? "(nothing)" : "'" + t + "'";
    }

    private static Duration since(long start) {
        return Duration.ofNanos(System.nanoTime() - start);
    }

    private static String hostName() {
        String h = System.getenv("HOSTNAME");
        if (h == null || h.isBlank()) {
            try {
                h = java.net.InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                h = "unknown-host";
            }
        }
        return h;
    }

}
