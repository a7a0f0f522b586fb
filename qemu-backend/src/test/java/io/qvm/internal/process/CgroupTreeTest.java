package io.qvm.internal.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.SandboxConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CgroupTree} on a directory laid out like cgroupfs (the host's own cgroups are not a
 * test's to change), and its verdict on this host's real {@code /sys/fs/cgroup}.
 */
@Tag("unit")
@Tag("security")
class CgroupTreeTest {

    @TempDir
    Path tmp;

    /** A cgroup v2 root offering {@code controllers}, with nothing enabled for its children yet. */
    static Path fakeMount(Path dir, String controllers) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("cgroup.controllers"), controllers + "\n");
        Files.writeString(dir.resolve("cgroup.subtree_control"), "");
        Files.writeString(dir.resolve("cgroup.procs"), "");
        return dir;
    }

    @Test
    void theHostsVerdictSaysWhyWhenThereIsNoCgroupV2() throws Exception {
        CgroupTree.Availability a = CgroupTree.system().availability();
        if (!Files.isDirectory(CgroupTree.MOUNT)
                || !Files.getFileStore(CgroupTree.MOUNT).type().equals("cgroup2")) {
            assertFalse(a.usable());
            assertTrue(a.detail().contains("not cgroup v2") || a.detail().contains("does not exist"), a.detail());
        } else {
            assertTrue(a.usable() || a.detail().contains("not writable") || a.detail().contains("offers"), a.detail());
        }
    }

    @Test
    void aTreeWithoutTheMemoryOrPidsControllerIsNotUsed() throws Exception {
        CgroupTree tree = CgroupTree.at(fakeMount(tmp.resolve("cg"), "cpu io memory"));
        CgroupTree.Availability a = tree.availability();
        assertFalse(a.usable());
        assertTrue(a.detail().contains("not memory and pids"), a.detail());
        assertThrows(IOException.class, tree::prepare);
        assertFalse(Files.exists(tree.subtree()), "nothing was made");
    }

    @Test
    void eachSandboxGetsItsLimitsAndItsQemuAndLeavesNothingBehind() throws Exception {
        Path mount = fakeMount(tmp.resolve("cg"), "cpuset cpu io memory hugetlb pids rdma misc");
        CgroupTree tree = CgroupTree.at(mount);
        assertTrue(tree.availability().usable(), tree.availability().detail());
        assertTrue(tree.availability().detail().contains("cpu.max = vCPUs + 50% of a CPU"), tree.availability().detail());
        tree.prepare();
        assertEquals("+memory +pids +cpu", Files.readString(mount.resolve("cgroup.subtree_control")));
        assertEquals("+memory +pids +cpu", Files.readString(tree.subtree().resolve("cgroup.subtree_control")));

        SandboxConfig config = SandboxConfig.builder().memoryMib(1024).vcpus(2).build();
        long max = CgroupTree.memoryMaxBytes(config, true, 128);
        assertEquals((1024L + 256 + 128) << 20, max);
        assertEquals((1024L + 256) << 20, CgroupTree.memoryMaxBytes(config, false, 128));
        assertEquals(98, CgroupTree.tasksMax(config));
        CgroupTree.Cgroup g = tree.create("sb1", max, CgroupTree.tasksMax(config),
                Optional.of(CgroupTree.cpuMax(config)));
        g.add(4242);
        assertEquals(Optional.of(Long.toString(max)), g.limit("memory.max"));
        assertEquals(Optional.of("98"), g.limit("pids.max"));
        assertEquals(Optional.of("250000 100000"), g.limit("cpu.max"), "two vCPUs and half a CPU for QEMU, per 100 ms");
        assertEquals(Optional.of("0"), g.limit("memory.swap.max"));
        assertEquals(List.of(4242L), g.processes());
        g.close();
        assertFalse(Files.exists(g.dir()));
        g.close(); // idempotent
    }

    @Test
    void cpuMaxIsOneCpuPerVcpuAndHalfACpuForQemusOwnThreads() {
        assertEquals("150000 100000", CgroupTree.cpuMax(SandboxConfig.builder().vcpus(1).build()).value());
        assertEquals("450000 100000", CgroupTree.cpuMax(SandboxConfig.builder().vcpus(4).build()).value());
        assertThrows(IllegalArgumentException.class, () -> new CgroupTree.CpuMax(500, 100_000));
        assertThrows(IllegalArgumentException.class, () -> new CgroupTree.CpuMax(100_000, 2_000_000));
    }

    /** Where cgroup v2 has no cpu controller, QEMU still gets the other limits, and the verdict says what it lacks. */
    @Test
    void aTreeWithoutTheCpuControllerGetsTheOtherLimitsAndSaysSo() throws Exception {
        Path mount = fakeMount(tmp.resolve("cg"), "io memory pids");
        CgroupTree tree = CgroupTree.at(mount);
        CgroupTree.Availability a = tree.availability();
        assertTrue(a.usable(), a.detail());
        assertTrue(a.detail().contains("no cpu.max: cgroup v2 at " + mount + " offers no cpu controller"), a.detail());
        tree.prepare();
        assertEquals("+memory +pids", Files.readString(mount.resolve("cgroup.subtree_control")));
        assertEquals("+memory +pids", Files.readString(tree.subtree().resolve("cgroup.subtree_control")));
        SandboxConfig config = SandboxConfig.builder().vcpus(2).build();
        CgroupTree.Cgroup g = tree.create("sb2", 1L << 30, CgroupTree.tasksMax(config),
                Optional.of(CgroupTree.cpuMax(config)));
        assertEquals(Optional.of("98"), g.limit("pids.max"));
        assertFalse(Files.exists(g.dir().resolve("cpu.max")), "no controller, no cpu.max");
        g.close();
        assertFalse(Files.exists(g.dir()));
    }

    @Test
    void leftoversAreRemovedOnlyWhenEmptyOldAndNotKept() throws Exception {
        CgroupTree tree = CgroupTree.at(fakeMount(tmp.resolve("cg"), "memory pids"));
        tree.prepare();
        Path old = Files.createDirectory(tree.subtree().resolve("oldempty"));
        Path kept = Files.createDirectory(tree.subtree().resolve("kept"));
        Path busy = Files.createDirectory(tree.subtree().resolve("busy"));
        Files.writeString(busy.resolve("cgroup.procs"), "77\n");
        Path young = Files.createDirectory(tree.subtree().resolve("young"));
        FileTime longAgo = FileTime.from(Instant.now().minus(Duration.ofHours(1)));
        for (Path p : List.of(old, kept, busy)) {
            Files.setLastModifiedTime(p, longAgo);
        }
        assertEquals(List.of("oldempty"), tree.removeLeftovers(Duration.ofMinutes(1), "kept"::equals));
        assertTrue(Files.exists(kept) && Files.exists(busy) && Files.exists(young));
        assertTrue(tree.remove("young"));
        assertFalse(Files.exists(young));
        assertThrows(IllegalArgumentException.class, () -> tree.remove("../escape"));
    }
}
