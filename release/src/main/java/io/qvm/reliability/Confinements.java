package io.qvm.reliability;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The confinements a running QEMU actually has, read from {@code /proc/<pid>} (Linux): what
 * the reliability report says was active, observed rather than configured.
 */
final class Confinements {

    private Confinements() {
    }

    static List<String> of(long pid) {
        List<String> out = new ArrayList<>();
        Path proc = Path.of("/proc", Long.toString(pid));
        try {
            List<String> argv = Arrays.asList(new String(Files.readAllBytes(proc.resolve("cmdline")),
                    StandardCharsets.UTF_8).split("\0"));
            out.add(argv.contains("-sandbox") ? "QEMU seccomp: " + argv.get(argv.indexOf("-sandbox") + 1)
                    : "QEMU seccomp: off");
            out.add(argv.stream().anyMatch(a -> a.contains("netdev") || a.equals("-nic") || a.startsWith("-net"))
                    ? "network device: PRESENT" : "network device: none");
            argv.stream().filter(a -> a.contains("tb-size")).findFirst().ifPresent(a -> out.add("TCG cache: " + a));
            String status = Files.readString(proc.resolve("status"));
            String uid = status.lines().filter(l -> l.startsWith("Uid:")).findFirst().orElse("Uid: ?").split("\\s+")[1];
            out.add("QEMU user: uid " + uid + (uid.equals("0") ? " (root)" : ""));
            String env = new String(Files.readAllBytes(proc.resolve("environ")), StandardCharsets.UTF_8);
            out.add("QEMU environment: " + (env.isEmpty() ? 0 : env.split("\0").length) + " variables");
            String cgroup = Files.readString(proc.resolve("cgroup")).strip();
            out.add("cgroup: " + cgroup);
        } catch (IOException | RuntimeException e) {
            out.add("could not read /proc/" + pid + ": " + e);
        }
        out.add("guest: gVisor (runsc --network=none --oci-seccomp), worker as nobody, read-only root");
        return out;
    }
}
