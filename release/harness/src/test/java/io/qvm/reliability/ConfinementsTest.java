package io.qvm.reliability;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.bench.ProcFs;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The confinements {@code qvm reliability} observes on a running process (a real {@code sleep}
 * standing in for QEMU, started with a QEMU-like argv), on this Linux and with {@code /proc}
 * hidden as on macOS or Windows.
 */
@Tag("unit")
class ConfinementsTest {

    @TempDir
    Path tmp;

    private static Process qemuLike() throws Exception {
        return new ProcessBuilder("/bin/sh", "-c", "sleep 60", "-sandbox", "on,obsolete=deny").start();
    }

    @Test
    void withoutProcTheArgvStillCountsAndTheRestSaysLinuxOnly() throws Exception {
        Process p = qemuLike();
        try {
            List<String> lines = Confinements.of(ProcFs.at(tmp.resolve("no-proc")), p.pid());
            String all = String.join("\n", lines);
            assertTrue(all.contains("QEMU seccomp: on,obsolete=deny"), all);
            assertTrue(all.contains("network device: none"), all);
            assertTrue(all.contains("QEMU user: " + System.getProperty("user.name") + " (from the JDK)"), all);
            assertTrue(all.contains("QEMU environment: Linux only: /proc/PID/environ needs /proc"), all);
            assertTrue(all.contains("cgroup: Linux only"), all);
        } finally {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void withProcEverythingIsObserved() throws Exception {
        Process p = qemuLike();
        try {
            String all = String.join("\n", Confinements.of(ProcFs.system(), p.pid()));
            assertTrue(all.contains("QEMU seccomp: on,obsolete=deny"), all);
            assertTrue(all.contains("QEMU user: uid "), all);
            assertTrue(all.contains("variables"), all);
            assertTrue(!all.contains("Linux only"), all);
        } finally {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
        }
    }
}
