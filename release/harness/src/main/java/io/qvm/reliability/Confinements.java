package io.qvm.reliability;

import io.qvm.bench.ProcFs;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The confinements a running QEMU actually has, observed rather than configured: its argv (from
 * {@link ProcessHandle}, every OS where the JDK gives arguments), its user, environment and cgroup
 * from {@code /proc/<pid>} (Linux). Without {@code /proc} each of those lines says "Linux only"
 * and what to check instead ({@link ProcFs}); the rest of the report still stands.
 */
final class Confinements {

    private Confinements() {
    }

    static List<String> of(long pid) {
        return of(ProcFs.system(), pid);
    }

    static List<String> of(ProcFs proc, long pid) {
        List<String> out = new ArrayList<>();
        Optional<ProcessHandle.Info> info = ProcessHandle.of(pid).map(ProcessHandle::info);
        Optional<List<String>> argv = info.flatMap(i -> i.arguments().map(a -> {
            List<String> all = new ArrayList<>(Arrays.asList(a));
            all.add(0, i.command().orElse("?"));
            return all;
        }));
        if (argv.isPresent()) {
            List<String> a = argv.get();
            out.add(a.contains("-sandbox") ? "QEMU seccomp: " + a.get(a.indexOf("-sandbox") + 1) : "QEMU seccomp: off");
            out.add(a.stream().anyMatch(x -> x.contains("netdev") || x.equals("-nic") || x.startsWith("-net"))
                    ? "network device: PRESENT" : "network device: none");
            a.stream().filter(x -> x.contains("tb-size")).findFirst().ifPresent(x -> out.add("TCG cache: " + x));
        } else {
            out.add("QEMU command line: not given by the JDK on this host (check it in `qvm ps` or the process list)");
        }
        try {
            String status = proc.pidFile(pid, "status", "`ps -o user= -p " + pid + "` shows QEMU's user");
            String uid = status.lines().filter(l -> l.startsWith("Uid:")).findFirst().orElse("Uid: ?").split("\\s+")[1];
            out.add("QEMU user: uid " + uid + (uid.equals("0") ? " (root)" : ""));
        } catch (IOException e) {
            out.add("QEMU user: " + info.flatMap(ProcessHandle.Info::user).map(u -> u + " (from the JDK)")
                    .orElse(e.getMessage()));
        }
        try {
            String env = proc.pidFile(pid, "environ", "`ps -E -p " + pid + "` (macOS) lists QEMU's environment");
            out.add("QEMU environment: " + (env.isEmpty() ? 0 : env.split("\0").length) + " variables");
        } catch (IOException e) {
            out.add("QEMU environment: " + e.getMessage());
        }
        try {
            out.add("cgroup: " + proc.pidFile(pid, "cgroup", "there are no cgroups (nothing to check)").strip());
        } catch (IOException e) {
            out.add("cgroup: " + e.getMessage());
        }
        out.add("guest: gVisor (runsc --network=none --oci-seccomp), worker as nobody, read-only root");
        return out;
    }
}
