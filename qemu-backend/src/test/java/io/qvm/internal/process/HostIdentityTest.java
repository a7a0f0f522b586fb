package io.qvm.internal.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.internal.host.CommandRunner;
import io.qvm.internal.host.HostOs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stable host identity for the reaper: macOS and Windows through a {@link CommandRunner} that
 * replays their tools' outputs (shaped after what {@code ioreg}, {@code sysctl} and {@code reg.exe}
 * print; not recorded on those hosts), Linux through a directory laid out like {@code /}, and the
 * reaper itself on real records and real dead pids.
 */
@Tag("unit")
class HostIdentityTest {

    /** {@code ioreg -rd1 -c IOPlatformExpertDevice} on an Apple silicon MacBook Pro (serial shortened). */
    static final String IOREG = """
            +-o J314sAP  <class IOPlatformExpertDevice, id 0x100000227, registered, matched, active, busy 0 (42 ms), retain 37>
                {
                  "IOPlatformSerialNumber" = "C02XXXXXXXXX"
                  "compatible" = <"J314sAP","MacBookPro18,3","AppleARM">
                  "IOPlatformUUID" = "564d8f3b-0c6e-4b52-9c1a-6d2e0f1a2b3c"
                  "model" = <"MacBookPro18,3">
                }
            """;

    /** {@code reg query HKLM\SOFTWARE\Microsoft\Cryptography /v MachineGuid} (CRLF, as reg.exe prints). */
    static final String REG = "\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\r\n"
            + "    MachineGuid    REG_SZ    0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9\r\n\r\n";

    @TempDir
    Path tmp;

    private final TestProcesses processes = new TestProcesses();

    @AfterEach
    void cleanUp() throws Exception {
        processes.close();
    }

    private static CommandRunner replay(Map<String, CommandRunner.Result> answers, List<String> asked) {
        return (argv, d) -> {
            String line = String.join(" ", argv);
            asked.add(line);
            CommandRunner.Result r = answers.get(line);
            if (r == null) {
                throw new UncheckedIOException(new IOException("Cannot run program \"" + argv.get(0) + "\""));
            }
            return r;
        };
    }

    private static CommandRunner.Result out(String s) {
        return new CommandRunner.Result(0, s, "", false);
    }

    @Test
    void macosReadsIoPlatformUuidByAbsolutePath() {
        List<String> asked = new ArrayList<>();
        HostIdentity h = HostIdentity.detect(HostOs.MACOS, replay(Map.of(
                "/usr/sbin/ioreg -rd1 -c IOPlatformExpertDevice", out(IOREG)), asked), tmp, Map.of(), "Janes-MBP.fritz.box");
        assertEquals(Optional.of("macos:564D8F3B-0C6E-4B52-9C1A-6D2E0F1A2B3C"), h.id());
        assertEquals(List.of("/usr/sbin/ioreg -rd1 -c IOPlatformExpertDevice"), asked);
    }

    @Test
    void macosFallsBackToKernUuid() {
        List<String> asked = new ArrayList<>();
        HostIdentity h = HostIdentity.detect(HostOs.MACOS, replay(Map.of(
                "/usr/sbin/sysctl -n kern.uuid", out("9F3A1C22-7B1D-4E0A-8C55-0E6B2D4F9A10\n")), asked), tmp, Map.of(), "m");
        assertEquals(Optional.of("macos:9F3A1C22-7B1D-4E0A-8C55-0E6B2D4F9A10"), h.id());
        assertEquals(Optional.empty(), HostIdentity.detect(HostOs.MACOS, replay(Map.of(), asked), tmp, Map.of(), "m").id(),
                "neither tool answers: no identifier, the name decides");
    }

    @Test
    void windowsReadsMachineGuidWithRegExeFromSystemRoot() {
        List<String> asked = new ArrayList<>();
        HostIdentity h = HostIdentity.detect(HostOs.WINDOWS, replay(Map.of(
                "D:\\Win\\System32\\reg.exe query HKLM\\SOFTWARE\\Microsoft\\Cryptography /v MachineGuid", out(REG)),
                asked), tmp, Map.of("SystemRoot", "D:\\Win"), "DESKTOP-1");
        assertEquals(Optional.of("windows:0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"), h.id());
    }

    @Test
    void linuxReadsMachineIdAndThePidNamespace() throws IOException {
        CommandRunner none = (argv, d) -> {
            throw new AssertionError("no command on Linux: " + argv);
        };
        Files.createDirectories(tmp.resolve("etc"));
        Files.createDirectories(tmp.resolve("proc/self/ns"));
        Files.createSymbolicLink(tmp.resolve("proc/self/ns/pid"), Path.of("pid:[4026531836]"));
        Files.writeString(tmp.resolve("etc/machine-id"), "uninitialized\n");
        assertEquals(Optional.empty(), HostIdentity.detect(HostOs.LINUX, none, tmp, Map.of(), "h").id());
        Files.createDirectories(tmp.resolve("var/lib/dbus"));
        Files.writeString(tmp.resolve("var/lib/dbus/machine-id"), "3d1219c7c4c5404aaa1f6d2a48adfda4\n");
        assertEquals(Optional.of("linux:3d1219c7c4c5404aaa1f6d2a48adfda4:pid:[4026531836]"),
                HostIdentity.detect(HostOs.LINUX, none, tmp, Map.of(), "h").id());
    }

    @Test
    void theIdentifierDecidesAndTheNameServesOldRecords() {
        HostIdentity mac = new HostIdentity(Optional.of("macos:A"), "cafe-wifi.local");
        assertEquals(Optional.empty(), mac.otherHost("macos:A", "office.example.com"), "same Mac, new network name");
        assertTrue(mac.otherHost("macos:B", "cafe-wifi.local").isPresent(), "same name, another Mac");
        assertEquals(Optional.empty(), mac.otherHost(null, "cafe-wifi.local"), "an old record, matched by name");
        assertTrue(mac.otherHost(null, "office.example.com").isPresent());
        HostIdentity noId = new HostIdentity(Optional.empty(), "h");
        assertEquals(Optional.empty(), noId.otherHost("macos:A", "h"), "no identifier now: the name decides");
    }

    @Test
    void ownerJsonCarriesTheIdentifierAndReadsRecordsWithout() throws Exception {
        OwnerRecord r = new OwnerRecord("abcdefabcdef", "h", 12, null, java.time.Instant.parse("2026-01-01T00:00:00Z"),
                "q", null, null, null, "macos:A");
        assertEquals(r, OwnerRecord.parse(r.toJson()));
        assertTrue(new String(r.toJson(), java.nio.charset.StandardCharsets.UTF_8).contains("\"hostId\" : \"macos:A\""));
        OwnerRecord old = OwnerRecord.parse(("{\"format\":1,\"sandboxId\":\"abcdefabcdef\",\"hostName\":\"h\","
                + "\"ownerPid\":12,\"createdAt\":\"2026-01-01T00:00:00Z\",\"qemuBinary\":\"q\"}").getBytes());
        assertEquals(null, old.hostId());
    }

    /**
     * The bug: a Mac whose name follows the network left its own dead sandboxes behind forever,
     * "recorded on another host". With the identifier they are reaped under any name.
     */
    @Test
    void aRenamedHostsOwnDeadSandboxIsReaped() throws Exception {
        StateDirectory states = StateDirectory.at(tmp.resolve("state"));
        Path runtime = tmp.resolve("run");
        SandboxState s = states.create("renamedhost1", "qemu", SocketPaths.forSandbox(runtime, "renamedhost1")
                .createDirectories());
        s.write(new OwnerRecord("renamedhost1", "office.example.com", processes.deadPid(), null,
                java.time.Instant.now(), "qemu", null, null, null, "macos:A"));
        HostIdentity now = new HostIdentity(Optional.of("macos:A"), "cafe-wifi.local");
        ReapReport r = new StaleSandboxReaper(states, runtime, null, Duration.ofSeconds(1), Duration.ofSeconds(1), now)
                .reap();
        assertEquals(ReapReport.Outcome.REMOVED, r.entry("renamedhost1").orElseThrow().outcome(), r.toString());
        assertFalse(Files.exists(s.dir()));
    }

    @Test
    void anotherMacWithTheSameNameIsLeftAlone() throws Exception {
        StateDirectory states = StateDirectory.at(tmp.resolve("state"));
        Path runtime = tmp.resolve("run");
        SandboxState s = states.create("othermac0001", "qemu", SocketPaths.forSandbox(runtime, "othermac0001")
                .createDirectories());
        s.write(new OwnerRecord("othermac0001", "MacBook-Pro.local", processes.deadPid(), null,
                java.time.Instant.now(), "qemu", null, null, null, "macos:B"));
        HostIdentity now = new HostIdentity(Optional.of("macos:A"), "MacBook-Pro.local");
        ReapReport r = new StaleSandboxReaper(states, runtime, null, Duration.ofSeconds(1), Duration.ofSeconds(1), now)
                .reap();
        assertEquals(ReapReport.Outcome.SKIPPED_OTHER_HOST, r.entry("othermac0001").orElseThrow().outcome());
        assertTrue(Files.exists(s.dir()));
    }

    @Test
    void thisProcessesRecordsCarryThisHostsIdentifier() throws Exception {
        SandboxState s = StateDirectory.at(tmp.resolve("state")).create("mineminemine", "qemu",
                SocketPaths.forSandbox(tmp.resolve("run"), "mineminemine").createDirectories());
        assertEquals(HostIdentity.current().id().orElse(null), s.owner().hostId());
        assertEquals(HostIdentity.current().name(), s.owner().hostName());
    }
}
