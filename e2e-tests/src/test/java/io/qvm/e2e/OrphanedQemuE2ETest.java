package io.qvm.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.internal.process.ReapReport;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A host JVM killed with SIGKILL cannot stop its QEMU; the next backend start must find it (by its
 * owner record) and reap it.
 */
@Tag("e2e")
@Tag("qemu")
@Tag("fault")
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class OrphanedQemuE2ETest {

    @TempDir
    Path state;

    /** The child JVM: starts one sandbox, says so, then waits to be killed. */
    public static void main(String[] args) throws Exception {
        QemuVmBackend backend = QemuVmBackend.builder().stateDirectory(Path.of(args[0])).imageDir(E2e.imageRoot())
                .reapOnStart(false).progress(line -> System.err.println(line)).build();
        Sandbox s = backend.start(E2e.config().build());
        System.out.println("STARTED " + s.id() + " " + ((io.qvm.internal.sandbox.QemuSandbox) s).pid());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }

    @Test
    void aQemuWhoseOwnerWasKilledIsReapedByTheNextBackend() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process child = new ProcessBuilder(List.of(java.toString(), "-cp", System.getProperty("java.class.path"),
                OrphanedQemuE2ETest.class.getName(), state.toString()))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String line;
        try {
            line = CompletableFuture.supplyAsync(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String l;
                    while ((l = r.readLine()) != null) {
                        if (l.startsWith("STARTED ")) {
                            return l;
                        }
                    }
                    return null;
                } catch (Exception e) {
                    return null;
                }
            }).get(10, TimeUnit.MINUTES);
        } finally {
            child.destroyForcibly(); // SIGKILL: no shutdown hook runs
        }
        assertTrue(line != null, "the child JVM started a sandbox");
        String[] parts = line.split(" ");
        String id = parts[1];
        long qemuPid = Long.parseLong(parts[2]);
        child.waitFor(1, TimeUnit.MINUTES);
        E2e.log("child JVM killed; its QEMU " + qemuPid + " alive: " + ProcessHandle.of(qemuPid).map(
                ProcessHandle::isAlive).orElse(false));
        assertTrue(Files.isDirectory(state.resolve("sandboxes").resolve(id)), "the orphan's state is still there");

        try (QemuVmBackend next = E2e.backend(state)) {
            java.util.List<io.qvm.admin.SandboxStates.Reaped> report = next.admin().startupReap().orElseThrow();
            E2e.log("reap report: " + report);
            io.qvm.admin.SandboxStates.Reaped entry = report.stream().filter(r -> r.sandboxId().equals(id)).findFirst()
                    .orElseThrow(() -> new AssertionError("not in " + report));
            assertTrue(entry.outcome().removed(), "reaped: " + entry);
        }
        await().atMost(Duration.ofMinutes(1)).until(() -> ProcessHandle.of(qemuPid).map(p -> !p.isAlive())
                .orElse(true));
        assertFalse(Files.exists(state.resolve("sandboxes").resolve(id)), "its state directory is gone");
        assertEquals(List.of(), E2e.processesMentioning(state.toString()));
    }
}
