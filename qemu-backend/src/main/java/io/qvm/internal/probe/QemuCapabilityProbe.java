package io.qvm.internal.probe;

import io.qvm.internal.host.QemuCapabilities;
import io.qvm.internal.host.CommandRunner;

import io.qvm.HostSetupException;
import io.qvm.protocol.image.Arch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Asks one QEMU binary what it can do ({@link QemuCapabilities}), once per binary: the answer is
 * kept in this JVM and, when a {@link ProbeCache} is given, on disk under the binary's
 * {@link Identity} (path, size, modification time and {@code --version} line), so a later process
 * on the same binary starts no QEMU for it. A changed binary (an upgrade) has another identity and
 * is asked again.
 *
 * <p>What it runs (each short, no guest, with a deadline): {@code -accel help},
 * {@code -machine help}, {@code -object help}, {@code -device help}, {@code -machine <type>,help}
 * for the machine types qvm uses that {@code -machine help} lists ({@link #MACHINE_TYPES}), and a
 * QMP session on {@code -machine none -nodefaults -no-user-config -display none -qmp stdio} that
 * sends {@code qmp_capabilities}, {@code query-command-line-options} and {@code quit} (about
 * 0.3 s; it boots nothing). {@code src/test/resources/qemu-builds/record.sh} runs the same
 * commands to record a build's answers for the tests.
 */
final class QemuCapabilityProbe {

    /** The machine types whose properties qvm reads, by guest architecture. */
    public static final Map<Arch, List<String>> MACHINE_TYPES = Map.of(
            Arch.X86_64, List.of("q35", "microvm"), Arch.AARCH64, List.of("virt"));

    /** What is written to the QMP session's stdin. */
    public static final String QMP_SESSION = "{\"execute\":\"qmp_capabilities\"}\n"
            + "{\"execute\":\"query-command-line-options\"}\n{\"execute\":\"quit\"}\n";

    private static final Duration DEADLINE = Duration.ofSeconds(10);
    /** Answers already read in this JVM, by {@link Identity#key()}. */
    private static final Map<String, QemuCapabilities> KNOWN = new ConcurrentHashMap<>();

    private final CommandRunner runner;
    private final ProbeCache cache;

    /**
     * @param runner runs QEMU
     * @param cache  where answers are kept across processes; null: only in this JVM
     */
    public QemuCapabilityProbe(CommandRunner runner, ProbeCache cache) {
        this.runner = Objects.requireNonNull(runner, "runner");
        this.cache = cache;
    }

    /**
     * What identifies a QEMU build on this host: the path, size and modification time of the
     * binary and the first line of its {@code --version}.
     */
    public record Identity(Path binary, long size, long modifiedMillis, String versionLine) {
        public Identity {
            Objects.requireNonNull(binary, "binary");
            Objects.requireNonNull(versionLine, "versionLine");
        }

        /** Reads the file's size and time; {@code versionOutput} is what {@code --version} printed. */
        public static Identity of(Path binary, String versionOutput) {
            long size = -1;
            long mtime = -1;
            try {
                size = Files.size(binary);
                mtime = Files.getLastModifiedTime(binary).toMillis();
            } catch (IOException | UncheckedIOException e) {
                // a binary we cannot stat (a test's fake path): identified by path and version only
            }
            String first = versionOutput == null ? "" : versionOutput.strip().lines().findFirst().orElse("");
            return new Identity(binary, size, mtime, first);
        }

        /** The cache key. */
        public String key() {
            return binary + "|" + size + "|" + modifiedMillis + "|" + versionLine;
        }
    }

    /**
     * The capabilities of the binary identified by {@code id} that emulates {@code guest}: from
     * this JVM's memory, else the cache, else asked (and then remembered in both).
     *
     * @throws HostSetupException ({@code QEMU_NOT_FOUND}) when the binary does not answer as
     *     QEMU does; the message holds the command and what it printed
     */
    public QemuCapabilities capabilities(Identity id, Arch guest) {
        QemuCapabilities known = KNOWN.get(id.key());
        if (known != null) {
            return known;
        }
        Optional<QemuCapabilities> cached = cache == null ? Optional.empty() : cache.capabilities(id.key());
        QemuCapabilities c = cached.orElseGet(() -> {
            QemuCapabilities asked = ask(id.binary(), guest);
            if (cache != null) {
                cache.putCapabilities(id.key(), asked);
            }
            return asked;
        });
        KNOWN.put(id.key(), c);
        return c;
    }

    /** Runs the questions (no cache). */
    public QemuCapabilities ask(Path binary, Arch guest) {
        String q = binary.toString();
        String accel = run(List.of(q, "-accel", "help"));
        String machines = run(List.of(q, "-machine", "help"));
        String objects = run(List.of(q, "-object", "help"));
        String devices = run(List.of(q, "-device", "help"));
        Map<String, String> machineHelp = new LinkedHashMap<>();
        for (String type : MACHINE_TYPES.getOrDefault(guest, List.of())) {
            if (machines.lines().anyMatch(l -> l.startsWith(type + " "))) {
                machineHelp.put(type, run(List.of(q, "-machine", type + ",help")));
            }
        }
        List<String> qmpArgv = new ArrayList<>(List.of(q, "-machine", "none", "-nodefaults", "-no-user-config",
                "-display", "none", "-qmp", "stdio"));
        CommandRunner.Result qmp = checked(qmpArgv, runner(qmpArgv, QMP_SESSION));
        try {
            return QemuCapabilities.parse(accel, machines, objects, devices, machineHelp, qmp.stdout());
        } catch (IllegalArgumentException e) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, binary
                    + " does not answer as QEMU does: " + e.getMessage(), e);
        }
    }

    private String run(List<String> argv) {
        return checked(argv, runner(argv, null)).stdout();
    }

    private CommandRunner.Result runner(List<String> argv, String stdin) {
        try {
            return stdin == null ? runner.run(argv, DEADLINE) : runner.run(argv, stdin, DEADLINE);
        } catch (UncheckedIOException e) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, "cannot run " + argv.get(0) + ": "
                    + e.getMessage(), e);
        }
    }

    private static CommandRunner.Result checked(List<String> argv, CommandRunner.Result r) {
        if (!r.ok()) {
            throw new HostSetupException(HostSetupException.Problem.QEMU_NOT_FOUND, String.join(" ", argv)
                    + " failed (exit " + r.exitCode() + (r.timedOut() ? ", killed after " + DEADLINE.toSeconds()
                    + " s" : "") + "): " + r.stderr().strip() + " — qvm asks QEMU what it supports with these "
                    + "commands; reinstall QEMU or point $QVM_QEMU at a working build");
        }
        return r;
    }
}
