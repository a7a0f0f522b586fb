package io.qvm;

import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.probe.HostProbe;
import io.qvm.internal.probe.QemuLocator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.Properties;

/**
 * A host whose {@code qemu-system-x86_64} is {@link FakeQemu}: a launcher script in a temporary
 * directory that starts a JVM running it with this test's class path, a small guest image with
 * the real layout and checksums, and state, runtime and template directories of its own. The
 * backend it builds uses all of it through its real code paths — the host probe runs the script's
 * {@code --version} and the capability probe's questions (answered as QEMU 10.0.2 of
 * bookworm-backports answered them: {@link #PROBE_BUILD}), the launcher starts it as a process, the sandbox
 * talks QMP, the worker protocol and the control protocol to it. Public, in this module's test-jar,
 * for the release gate's tests (io.qvm.release.HostGateTest) too.
 */
public final class FakeQemuHost {

    /** The recorded build whose answers the fake gives to the capability probe. */
    public static final String PROBE_BUILD = "debian-12-backports-x86_64";
    private static final java.util.List<String> PROBE_FILES = java.util.List.of("accel-help.txt", "machine-help.txt",
            "object-help.txt", "device-help.txt", "machine-q35-help.txt", "machine-microvm-help.txt", "qmp.txt");

    private final Path root;
    private final Properties scenario = new Properties();

    public FakeQemuHost(Path root) throws IOException {
        this.root = root;
        Path bin = Files.createDirectories(root.resolve("bin"));
        Path qemu = bin.resolve("qemu-system-x86_64");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // The capability probe's questions are answered by the shell from a recorded build's answers
        // (a JVM start per question would make every backend's first probe seconds slower).
        Path answers = Files.createDirectories(root.resolve("probe-answers"));
        for (String f : PROBE_FILES) {
            try (var in = FakeQemuHost.class.getResourceAsStream("/qemu-builds/" + PROBE_BUILD + "/" + f)) {
                Files.copy(in, answers.resolve(f));
            }
        }
        String a = "'" + answers + "/";
        Files.writeString(qemu, "#!/bin/sh\ncase \"$1 $2\" in\n"
                + "'-accel help') exec cat " + a + "accel-help.txt' ;;\n"
                + "'-machine help') exec cat " + a + "machine-help.txt' ;;\n"
                + "'-object help') exec cat " + a + "object-help.txt' ;;\n"
                + "'-device help') exec cat " + a + "device-help.txt' ;;\n"
                + "'-machine q35,help') exec cat " + a + "machine-q35-help.txt' ;;\n"
                + "'-machine microvm,help') exec cat " + a + "machine-microvm-help.txt' ;;\n"
                + "'-machine none') cat >/dev/null; exec cat " + a + "qmp.txt' ;;\n"
                + "esac\n"
                + "exec '" + java + "' -Xshare:auto -XX:TieredStopAtLevel=1 -cp '"
                + System.getProperty("java.class.path") + "' " + FakeQemu.class.getName() + " '" + root + "' \"$@\"\n");
        Files.setPosixFilePermissions(qemu, PosixFilePermissions.fromString("rwxr-xr-x"));
        io.qvm.internal.image.TestImages.write(root.resolve("image").resolve("x86_64"), io.qvm.protocol.image.Arch.X86_64,
                "fake"); // "6.1.0-fake"; not a kernel: the fake QEMU boots nothing
        Path cgroup = Files.createDirectories(cgroupRoot());
        Files.writeString(cgroup.resolve("cgroup.controllers"), "cpu io memory pids\n");
        Files.writeString(cgroup.resolve("cgroup.subtree_control"), "");
        Files.writeString(cgroup.resolve("cgroup.procs"), "");
        saveScenario();
    }

    /** Sets one scenario key for every later start (see {@link FakeQemu}). */
    public FakeQemuHost set(String key, String value) throws IOException {
        scenario.setProperty(key, value);
        saveScenario();
        return this;
    }

    /** Tells a fake QEMU playing {@code flood} with {@code floodWhen=idle} to flood now. */
    public void floodNow() throws IOException {
        Files.writeString(root.resolve("flood-now"), "");
    }

    /** The seeds the host sent with the init's {@code restore}, in order (hex, one per restore). */
    public java.util.List<String> seeds() throws IOException {
        Path f = root.resolve("seeds");
        return Files.exists(f) ? Files.readAllLines(f) : java.util.List.of();
    }

    /** The microseconds of every {@code step} the host sent the init, in order. */
    public java.util.List<Long> steps() throws IOException {
        Path f = root.resolve("steps");
        return Files.exists(f) ? Files.readAllLines(f).stream().map(Long::parseLong).toList() : java.util.List.of();
    }

    /** What the host did to the fake VMs, in order: {@code qmp <command>} and {@code control <verb>} lines. */
    public java.util.List<String> vmLog() throws IOException {
        Path f = root.resolve("vm.log");
        return Files.exists(f) ? Files.readAllLines(f) : java.util.List.of();
    }

    /**
     * What a test leaves must be nothing: no fake QEMU alive (waited for up to {@code patience}),
     * no sandbox state, no sockets, no cgroup.
     */
    public void assertNothingLeftBehind(java.time.Duration patience) throws IOException {
        org.awaitility.Awaitility.await().atMost(patience)
                .until(() -> processes().stream().noneMatch(ProcessHandle::isAlive));
        org.junit.jupiter.api.Assertions.assertEquals(java.util.List.of(), entries(stateRoot().resolve("sandboxes")),
                "sandbox state left behind");
        org.junit.jupiter.api.Assertions.assertEquals(java.util.List.of(), entries(runtimeRoot()), "sockets left behind");
        org.junit.jupiter.api.Assertions.assertEquals(java.util.List.of(), entries(cgroupRoot().resolve("qvm")).stream()
                .filter(Files::isDirectory).toList(), "cgroups left behind");
    }

    private static java.util.List<Path> entries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return java.util.List.of();
        }
        try (java.util.stream.Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    /** How many sandboxes the fake QEMU has played so far. */
    public int boots() throws IOException {
        Path counter = root.resolve("boots");
        return Files.exists(counter) ? Integer.parseInt(Files.readString(counter).strip()) : 0;
    }

    /** The command line of the last sandbox the fake QEMU played. */
    public java.util.List<String> lastArgv() throws IOException {
        return Files.readAllLines(root.resolve("argv"));
    }

    /** Every fake QEMU process that played a sandbox (its pid), alive or not. */
    public java.util.List<ProcessHandle> processes() throws IOException {
        Path pids = root.resolve("pids");
        if (!Files.exists(pids)) {
            return java.util.List.of();
        }
        return Files.readAllLines(pids).stream().filter(l -> !l.isBlank())
                .map(l -> ProcessHandle.of(Long.parseLong(l.strip()))).flatMap(java.util.Optional::stream).toList();
    }

    public Path stateRoot() {
        return root.resolve("state");
    }

    public Path runtimeRoot() {
        return root.resolve("run");
    }

    public Path templateRoot() {
        return root.resolve("templates");
    }

    /** A cgroup v2 root of this host's own, laid out like cgroupfs (the real one is not a test's to change). */
    public Path cgroupRoot() {
        return root.resolve("cgroup");
    }

    /**
     * A backend on this host: every directory its own, the probe finding the fake QEMU, QEMU
     * kept as the test's user (a JVM cannot drop its uid the way QEMU's {@code -runas} does; the
     * tests run as root too, and a root host's policy is tested with {@link #backendAsRoot}).
     */
    public QemuVmBackend.Builder backend() {
        return backendAsRoot(io.qvm.internal.process.QemuUser.of(1000, "qvm", name -> java.util.Optional.empty()));
    }

    /** {@link #backend()} with QEMU's user chosen by {@code user} (e.g. a root host's). */
    public QemuVmBackend.Builder backendAsRoot(io.qvm.internal.process.QemuUser user) {
        return withoutImage(user).imageDir(imageRoot());
    }

    /** {@link #backend()} finding its image with {@code images} instead of in {@link #imageRoot()}. */
    public QemuVmBackend.Builder backend(io.qvm.internal.image.ImageResolver images) {
        return withoutImage(io.qvm.internal.process.QemuUser.of(1000, "qvm", name -> java.util.Optional.empty()))
                .imageResolver(images);
    }

    /** The image root holding this host's small x86_64 image (the real layout and checksums). */
    public Path imageRoot() {
        return root.resolve("image");
    }

    private QemuVmBackend.Builder withoutImage(io.qvm.internal.process.QemuUser user) {
        // Only the fake counts: a real qemu-system-* in /usr/bin must not be probed (this is a unit test).
        QemuLocator locator = new QemuLocator(HostOs.LINUX, Map.of("QVM_QEMU", root.resolve("bin").toString()),
                p -> p.startsWith(root) && Files.isRegularFile(p) && Files.isExecutable(p));
        return QemuVmBackend.builder().hostProbe(new HostProbe("Linux", "amd64", locator, CommandRunner.system()))
                .stateDirectory(stateRoot()).runtimeDirectory(runtimeRoot())
                .templateDirectory(templateRoot()).classArchiveDirectory(root.resolve("class-archives")).useProbeCache(false).qemuUser(user)
                .cgroups(io.qvm.internal.process.CgroupTree.at(cgroupRoot()))
                // a fake's JVM is not idle when just started (its JIT): IdlePauseTest sets its own check
                .pauseCheck(io.qvm.internal.sandbox.QemuSandbox.PauseCheck.OFF);
    }

    /** A config for this host: TCG (so no probe of /dev/kvm decides), deadlines that fit a test. */
    public static SandboxConfig.Builder config() {
        return SandboxConfig.builder().accelerator(Accelerator.TCG).vcpus(1)
                .bootTimeout(java.time.Duration.ofSeconds(60));
    }

    private void saveScenario() throws IOException {
        try (var out = Files.newOutputStream(root.resolve("scenario.properties"))) {
            scenario.store(out, "what the fake QEMU does");
        }
    }
}
