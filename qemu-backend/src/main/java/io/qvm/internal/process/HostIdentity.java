package io.qvm.internal.process;

import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;
import io.qvm.internal.host.MacOsTools;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Which host wrote an {@code owner.json}: a stable machine identifier where the OS has one, and
 * the host's name for people and for records written before identifiers were kept.
 *
 * <p>A name alone is not enough: on a Mac without {@code /proc} the name came from a reverse DNS
 * lookup that changes with the network, so a Mac that moved from the office to home saw its own
 * old records as "another host's" and never reaped them. The identifier, per OS:
 * <ul>
 * <li><b>macOS</b>: {@code IOPlatformUUID} from {@code /usr/sbin/ioreg -rd1 -c IOPlatformExpertDevice}
 *     (the hardware UUID, as in System Information), else {@code /usr/sbin/sysctl -n kern.uuid}.</li>
 * <li><b>Linux</b>: {@code /etc/machine-id} (else {@code /var/lib/dbus/machine-id}) with the PID
 *     namespace of this process ({@code /proc/self/ns/pid}): containers started from one image can
 *     share a machine-id while their pids mean different processes, and pids are what the reaper
 *     acts on. The initial namespace's inode is a kernel constant, so a host keeps its identifier
 *     across reboots.</li>
 * <li><b>Windows</b>: {@code MachineGuid} from {@code %SystemRoot%\System32\reg.exe query
 *     HKLM\SOFTWARE\Microsoft\Cryptography /v MachineGuid}.</li>
 * </ul>
 * With no identifier (none readable), the name decides, as before. A record without
 * {@code hostId} (written by an older qvm) is compared by name too, so old records stay readable.
 * The macOS and Windows paths are untested on a real host: proven here with a
 * {@link CommandRunner} replaying recorded outputs.
 *
 * @param id   the stable identifier ({@code macos:…}, {@code linux:…}, {@code windows:…}), if any
 * @param name the host name ({@link HostName})
 */
record HostIdentity(Optional<String> id, String name) {

    private static final Duration DEADLINE = Duration.ofSeconds(10);
    private static final Pattern IOREG_UUID = Pattern.compile("\"IOPlatformUUID\"\\s*=\\s*\"([0-9A-Fa-f-]{36})\"");
    private static final Pattern UUID = Pattern.compile("[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}");
    private static final Pattern MACHINE_ID = Pattern.compile("[0-9a-f]{32}");
    private static final Pattern REG_GUID = Pattern.compile("MachineGuid\\s+REG_SZ\\s+(\\S+)");

    private static volatile HostIdentity cached;

    public HostIdentity {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
    }

    /** This host's identity, found once per JVM. */
    public static HostIdentity current() {
        HostIdentity h = cached;
        if (h == null) {
            h = detect(HostOs.fromOsName(System.getProperty("os.name", "")), CommandRunner.system(), Path.of("/"),
                    System.getenv(), HostName.get());
            cached = h;
        }
        return h;
    }

    /**
     * Finds the identity of a host.
     *
     * @param os     which OS's source to read
     * @param runner runs {@code ioreg}, {@code sysctl} or {@code reg.exe}, by absolute path
     * @param root   the file system root for the Linux files (a test's directory)
     * @param env    {@code SystemRoot} on Windows
     * @param name   the host name
     */
    public static HostIdentity detect(HostOs os, CommandRunner runner, Path root, Map<String, String> env, String name) {
        Optional<String> id;
        switch (os) {
            case MACOS:
                id = macos(runner);
                break;
            case LINUX:
                id = linux(root);
                break;
            case WINDOWS:
                id = windows(runner, env);
                break;
            default:
                id = Optional.empty();
        }
        return new HostIdentity(id, name);
    }

    /**
     * Empty when a record with {@code recordedId} (null in records of an older qvm) and
     * {@code recordedName} was written on this host; else why not, for the reaper's report.
     */
    public Optional<String> otherHost(String recordedId, String recordedName) {
        if (recordedId != null && id.isPresent()) {
            return recordedId.equals(id.get()) ? Optional.empty()
                    : Optional.of("recorded on host " + recordedName + " (" + recordedId + "), this is " + name + " ("
                            + id.get() + ")");
        }
        return recordedName.equals(name) ? Optional.empty()
                : Optional.of("recorded on host " + recordedName + ", this is " + name);
    }

    private static Optional<String> macos(CommandRunner runner) {
        Optional<String> out = run(runner, List.of(MacOsTools.IOREG, "-rd1", "-c", "IOPlatformExpertDevice"));
        if (out.isPresent()) {
            Matcher m = IOREG_UUID.matcher(out.get());
            if (m.find()) {
                return Optional.of("macos:" + m.group(1).toUpperCase(Locale.ROOT));
            }
        }
        return MacOsTools.sysctl(runner, "kern.uuid").filter(s -> UUID.matcher(s).matches())
                .map(s -> "macos:" + s.toUpperCase(Locale.ROOT));
    }

    private static Optional<String> linux(Path root) {
        Optional<String> machine = firstMachineId(root.resolve("etc/machine-id"))
                .or(() -> firstMachineId(root.resolve("var/lib/dbus/machine-id")));
        if (machine.isEmpty()) {
            return Optional.empty();
        }
        String pidns;
        try {
            pidns = Files.readSymbolicLink(root.resolve("proc/self/ns/pid")).toString(); // "pid:[4026531836]"
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            pidns = "?";
        }
        return Optional.of("linux:" + machine.get() + ":" + pidns);
    }

    private static Optional<String> firstMachineId(Path file) {
        try {
            String s = Files.readString(file, StandardCharsets.US_ASCII).strip();
            return MACHINE_ID.matcher(s).matches() ? Optional.of(s) : Optional.empty(); // "uninitialized" is not one
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private static Optional<String> windows(CommandRunner runner, Map<String, String> env) {
        String root = env.getOrDefault("SystemRoot", env.getOrDefault("SYSTEMROOT", "C:\\Windows"));
        String reg = root + "\\System32\\reg.exe";
        return run(runner, List.of(reg, "query", "HKLM\\SOFTWARE\\Microsoft\\Cryptography", "/v", "MachineGuid"))
                .flatMap(out -> {
                    Matcher m = REG_GUID.matcher(out);
                    return m.find() && UUID.matcher(m.group(1)).matches()
                            ? Optional.of("windows:" + m.group(1).toLowerCase(Locale.ROOT)) : Optional.empty();
                });
    }

    private static Optional<String> run(CommandRunner runner, List<String> argv) {
        try {
            CommandRunner.Result r = runner.run(argv, DEADLINE);
            return r.ok() ? Optional.of(r.stdout()) : Optional.empty();
        } catch (UncheckedIOException e) {
            return Optional.empty();
        }
    }
}
