package io.qvm.reliability;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Run state roots against real processes: a pid that ended, this JVM, a process that names a root. */
@Tag("unit")
class RunStatesTest {

    @TempDir
    Path tmp;

    @Test
    void aRunGetsARootNamedAfterItsJvm() throws Exception {
        Path root = RunStates.create(tmp);
        assertTrue(Files.isDirectory(root));
        assertTrue(root.getFileName().toString().startsWith("qvm-reliability-" + ProcessHandle.current().pid() + "-"),
                root.toString());
    }

    @Test
    void theRootOfAKilledRunIsRemovedAndLiveOnesAndStrangersAreKept() throws Exception {
        Path dead = Files.createDirectories(tmp.resolve("qvm-reliability-" + deadPid() + "-123"));
        Files.createDirectories(dead.resolve("load/sandboxes"));
        Files.writeString(dead.resolve("load/left.log"), "what a killed run left");
        Path mine = RunStates.create(tmp);
        Path oldName = Files.createDirectories(tmp.resolve("qvm-reliability-4878042549941074163"));
        Path other = Files.createDirectories(tmp.resolve("something-else"));

        assertEquals(List.of(dead), RunStates.removeStale(tmp));

        assertFalse(Files.exists(dead));
        assertTrue(Files.isDirectory(mine), "this JVM's run goes on");
        assertTrue(Files.isDirectory(oldName), "not a name this class gives");
        assertTrue(Files.isDirectory(other));
    }

    @Test
    void aRootAProcessStillNamesIsKept() throws Exception {
        Path dead = Files.createDirectories(tmp.resolve("qvm-reliability-" + deadPid() + "-456"));
        Process holder = new ProcessBuilder("sh", "-c", "sleep 600; :", dead.resolve("load").toString()).start();
        try {
            // Until the child has exec'd, its command line is still this JVM's.
            await().atMost(Duration.ofSeconds(30)).until(() -> holder.info().commandLine().orElse("").contains(dead.toString()));
            assertEquals(List.of(), RunStates.removeStale(tmp));
            assertTrue(Files.isDirectory(dead));
            assertTrue(holder.isAlive(), "only a QEMU proven to be a sandbox's is ever stopped");
        } finally {
            holder.descendants().forEach(ProcessHandle::destroyForcibly);
            holder.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        assertEquals(List.of(dead), RunStates.removeStale(tmp));
    }

    /** The pid of a process that has ended. */
    private static long deadPid() throws Exception {
        Process p = new ProcessBuilder("true").start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        return p.pid();
    }
}
