package io.qvm.release;

import io.qvm.admin.QvmLibrary;
import io.qvm.admin.HostReport;
import java.util.function.Supplier;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.util.Sha256;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * {@code qvm selftest}: proves the host it runs on end to end with the product's own gate
 * ({@link HostGate}, the steps the release gate runs on every image before it is published) applied
 * to the image this host would use — probe, cold boot, handshake, SVG and PDF rendered, every
 * hostile document refused, a template, two clones at once with their own randomness and the
 * host's clock, stop, nothing left — and reports what it ran on: the host, the QEMU build (its
 * path, version and SHA-256), the accelerator each boot got, and the image's files with their
 * hashes. A user attaches the report to a bug; a row of the README's host × accelerator matrix is
 * "proven" only by such a report.
 *
 * <p>{@code qvm selftest} runs the whole suite for the host's own architecture; an image of another
 * architecture (aarch64 on an x86_64 host, under TCG) gets the short suite unless {@code --full}:
 * boot, handshake, one SVG and one PDF, a template and two clones, stop, nothing left (the corpus
 * is what it leaves out).
 */
public final class Selftest {

    /** The report's JSON schema. */
    public static final String SCHEMA = "qvm.selftest/1";

    private final HostGate.Options gate;
    private final Supplier<List<HostReport.Qemu>> probe;

    /**
     * @param gate how the gate boots (backends, configs, stop timeout); its {@code fullSuite} and
     *     runtime root are decided per run
     * @param probe finds the QEMU that will run (only for the report: the backend probes on its own)
     */
    public Selftest(HostGate.Options gate, Supplier<List<HostReport.Qemu>> probe) {
        this.gate = Objects.requireNonNull(gate, "gate");
        this.probe = Objects.requireNonNull(probe, "probe");
    }

    /**
     * Runs the gate on {@code imageRoot/<arch>} and reports.
     *
     * @param imageRoot the image directory the backend would use ({@code <root>/<arch>/…})
     * @param arch the guest architecture to prove
     * @param full the host suite (corpus, template, clones); otherwise the short one (boot,
     *     handshake, SVG, PDF, stop, nothing left)
     */
    public Report run(Path imageRoot, Arch arch, boolean full, Consumer<String> progress) {
        Instant started = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        Host host = Host.current();
        Qemu qemu = qemu(arch);
        Image image = Image.of(imageRoot, arch);
        Set<Arch> suite = full ? Set.of(arch) : Set.of();
        HostGate.Options o = new HostGate.Options(gate.backends(), gate.nativeConfig(), gate.crossConfig(),
                gate.stopTimeout(), suite, gate.runtimeRoot(), gate.clones());
        GateResult result;
        if (image.problem() != null) {
            result = new GateResult("selftest", List.of(ReleaseStep.failed(arch.id() + ":image", 0, image.problem())),
                    List.of());
        } else {
            result = new HostGate(o).run(new StagedImages(QvmLibrary.version().orElse("unknown"), imageRoot, List.of(arch)),
                    progress);
        }
        String accelerator = result.boot(arch).map(GateResult.Boot::accelerator).orElse(null);
        String verdict = result.ok()
                ? "PROVEN: " + host.osName() + " " + host.arch() + " × " + accelerator + " ran every step end to end"
                : "FAILED at " + result.firstFailure().map(ReleaseStep::name).orElse("?") + ": "
                        + result.firstFailure().map(ReleaseStep::evidence).orElse("");
        return new Report(SCHEMA, result.ok(), verdict, started.toString(), QvmLibrary.version().orElse("unknown"), host, qemu,
                accelerator, result.boot(arch).map(GateResult.Boot::machine).orElse(null), image, suite.isEmpty()
                        ? "short" : "full", result.steps(), result.boots());
    }

    private Qemu qemu(Arch arch) {
        try {
            Optional<HostReport.Qemu> q = probe.get().stream().filter(x -> x.guestArch() == arch).findFirst();
            if (q.isEmpty()) {
                return new Qemu(null, null, null, List.of(), "no qemu-system-" + arch.qemuName() + " found");
            }
            HostReport.Qemu i = q.get();
            return new Qemu(i.binary().toString(), i.version(), sha256(i.binary()),
                    i.compiledIn().stream().map(a -> a.qemuName()).sorted().toList(), null);
        } catch (RuntimeException e) {
            return new Qemu(null, null, null, List.of(), e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    static String sha256(Path file) {
        try {
            return Sha256.of(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The host as the JVM sees it. */
    public record Host(String osName, String osVersion, String arch, int cpus, long maxHeapBytes, String java,
            String javaVendor) {
        static Host current() {
            return new Host(System.getProperty("os.name", ""), System.getProperty("os.version", ""),
                    System.getProperty("os.arch", ""), Runtime.getRuntime().availableProcessors(),
                    Runtime.getRuntime().maxMemory(), Runtime.version().toString(), System.getProperty("java.vendor", ""));
        }
    }

    /** The QEMU build the backend finds for the guest architecture; {@code problem} when none. */
    public record Qemu(String binary, String version, String sha256, List<String> compiledIn, String problem) {
    }

    /** The image proven: its directory and each file's SHA-256; {@code problem} when it is not there. */
    public record Image(String arch, String dir, Map<String, String> files, String problem) {
        static Image of(Path root, Arch arch) {
            Path dir = root.resolve(arch.qemuName());
            if (!Files.isDirectory(dir)) {
                return new Image(arch.qemuName(), dir.toString(), Map.of(), "no " + arch.qemuName() + " image in " + root
                        + ": build it (qvm image build" + (arch == Arch.X86_64 ? "" : " --arch " + arch.qemuName())
                        + ") or point --image-dir at one");
            }
            Map<String, String> files = new LinkedHashMap<>();
            try (Stream<Path> s = Files.list(dir)) {
                for (Path f : s.filter(Files::isRegularFile).sorted().toList()) {
                    files.put(f.getFileName().toString(), sha256(f));
                }
            } catch (IOException | UncheckedIOException e) {
                return new Image(arch.qemuName(), dir.toString(), files, "cannot read the image: " + e);
            }
            return new Image(arch.qemuName(), dir.toString(), files, null);
        }
    }

    /**
     * What a selftest proved, and on what.
     *
     * @param suite {@code full} (the host suite: corpus and clones) or {@code short}
     */
    public record Report(String schema, boolean ok, String verdict, String started, String qvmVersion, Host host,
            Qemu qemu, String accelerator, String machine, Image image, String suite, List<ReleaseStep> steps,
            List<GateResult.Boot> boots) {

        /** The report as a reader (and a bug tracker) wants it: Markdown. */
        public void printMarkdown(PrintWriter out) {
            out.println("# qvm selftest " + (ok ? "PASSED" : "FAILED") + " — " + started);
            out.println();
            out.println(verdict);
            out.println();
            out.println("| what | value |");
            out.println("| --- | --- |");
            out.println("| qvm | " + qvmVersion + " |");
            out.println("| host | " + host.osName() + " " + host.osVersion() + ", " + host.arch() + ", " + host.cpus()
                    + " CPUs, Java " + host.java() + " (" + host.javaVendor() + ") |");
            out.println("| QEMU | " + (qemu.problem() != null ? qemu.problem()
                    : qemu.binary() + " " + qemu.version() + ", sha256 " + qemu.sha256() + ", accelerators compiled in "
                            + qemu.compiledIn()) + " |");
            out.println("| accelerator | " + (accelerator == null ? "none (no boot)" : accelerator) + " |");
            out.println("| machine | " + (machine == null ? "-" : machine) + " |");
            out.println("| image | " + image.arch() + " in " + image.dir() + (image.problem() == null ? "" : ": "
                    + image.problem()) + " |");
            image.files().forEach((name, hash) -> out.println("| image file " + name + " | sha256 " + hash + " |"));
            out.println("| suite | " + suite + " |");
            out.println();
            out.println("| step | ok | seconds | evidence |");
            out.println("| --- | --- | --- | --- |");
            for (ReleaseStep s : steps) {
                out.printf("| %s | %s | %.1f | %s |%n", s.name(), s.ok() ? "yes" : "NO", s.millis() / 1000.0,
                        s.evidence().replace("|", "\\|").replace('\n', ' '));
            }
            out.flush();
        }
    }
}
