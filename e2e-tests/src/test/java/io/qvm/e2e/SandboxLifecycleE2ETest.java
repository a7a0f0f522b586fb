package io.qvm.e2e;

import io.qvm.protocol.ErrorCode;
import io.qvm.RenderFailedException;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qvm.QemuVmBackend;
import io.qvm.Sandbox;
import io.qvm.SandboxLostException;
import io.qvm.internal.process.StopReport;
import io.qvm.internal.sandbox.QemuSandbox;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Real QEMU, the real image, the real worker under gVisor: start → echo → stop, and how it fails. */
@Tag("e2e")
@Tag("qemu")
@Timeout(value = 20, unit = java.util.concurrent.TimeUnit.MINUTES)
class SandboxLifecycleE2ETest {

    @TempDir
    Path state;

    QemuVmBackend backend;

    @BeforeEach
    void setUp() {
        backend = E2e.backend(state);
    }

    @AfterEach
    void tearDown() {
        backend.close();
        // Nothing may outlive the test: no QEMU naming this state directory, no sandbox directory.
        await().atMost(Duration.ofMinutes(1)).until(() -> E2e.processesMentioning(state.toString()).isEmpty());
    }

    /**
     * Two cold boots with a class-archive store of their own (adr/0018): the first makes the
     * worker's archive in the guest and its worker maps it; the second boots the image with the
     * archive appended and maps it too (the worker's JVM says "sharing"); then the boot itself:
     * a MiB echoed, and the guest powers off when asked.
     */
    /**
     * The worker's {@code java.vm.info} when its JVM maps a class archive: under TCG also
     * "emulated-client", which is how HotSpot names C1 only ({@code qvm.jit=c1}, adr/0019);
     * under a hardware accelerator tiered compilation, which it does not name.
     */
    private static String sharingVm(Sandbox s) {
        return s.bootReport().accelerator().startsWith("tcg") ? "vm=\"mixed mode, emulated-client, sharing\""
                : "vm=\"mixed mode, sharing\"";
    }

    @Test
    void coldBootsMakeThenMapTheClassArchiveEchoAMebibyteAndPowerOffWhenAsked() throws Exception {
        backend.close();
        Path archives = state.resolve("class-archives");
        backend = QemuVmBackend.builder().imageDir(E2e.imageRoot()).stateDirectory(state).templates(false)
                .classArchiveDirectory(archives).progress(E2e::log).build(); // about the boot itself: no template
        try (Sandbox first = backend.start(E2e.config().build())) {
            E2e.log("boot report: " + first.bootReport());
            assertTrue(first.bootReport().notes().stream().anyMatch(n -> n.startsWith("class archive: made in this boot")),
                    "the first boot made the archive: " + first.bootReport().notes());
            assertTrue(first.bootReport().phase("guest:archive").isPresent(), first.bootReport().phases().toString());
            assertTrue(workerConsole(first).contains(sharingVm(first)),
                    "the worker mapped the archive its boot made: " + workerConsole(first));
        }
        Sandbox sandbox = backend.start(E2e.config().build());
        E2e.log("boot report: " + sandbox.bootReport());
        assertTrue(sandbox.bootReport().notes().contains("class archive: in use"), sandbox.bootReport().notes().toString());
        assertTrue(workerConsole(sandbox).contains(sharingVm(sandbox)),
                "the worker mapped the archive appended to the initramfs: " + workerConsole(sandbox));
        assertTrue(sandbox.isAlive());
        assertEquals("serial", sandbox.bootReport().transport());
        assertTrue(sandbox.bootReport().phase("guest:runsc").isPresent(),
                "the init's runsc marker reached the host: " + sandbox.bootReport().phases());
        assertTrue(Files.isDirectory(sandbox.stateDir()));

        byte[] payload = new byte[1 << 20];
        new Random(42).nextBytes(payload);
        assertArrayEquals(payload, sandbox.echo(payload));

        sandbox.close();
        StopReport stop = ((QemuSandbox) sandbox).stopReport().orElseThrow();
        E2e.log("stop report: " + stop);
        // GOODBYE → the worker exits → the init powers the guest off → QEMU exits by itself.
        assertEquals("goodbye", stop.stoppedBy(), "the guest powered off when asked: " + stop);
        assertFalse(sandbox.isAlive());
        assertFalse(Files.exists(sandbox.stateDir()), "the state directory is removed");
        assertEquals(SandboxLostException.Reason.CRASHED, assertThrows(SandboxLostException.class, () -> sandbox.echo(new byte[1])).reason());
    }

    /** The worker's own lines on the sandbox's console. */
    private static String workerConsole(Sandbox s) throws java.io.IOException {
        return Files.readAllLines(s.stateDir().resolve("console.log"), java.nio.charset.StandardCharsets.ISO_8859_1)
                .stream().filter(l -> l.startsWith("worker: starting")).collect(java.util.stream.Collectors.joining("\n"));
    }

    @Test
    void threeSandboxesAtOnceDoNotCrossTalk() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<Sandbox>> starting = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                // the suite's config: clones of the suite's template, not a template of their own
                starting.add(pool.submit(() -> backend.start(E2e.config().bootTimeout(Duration.ofMinutes(12)).build())));
            }
            List<Sandbox> sandboxes = new ArrayList<>();
            for (Future<Sandbox> f : starting) {
                sandboxes.add(f.get());
            }
            assertEquals(3, sandboxes.stream().map(Sandbox::id).distinct().count());
            for (int round = 0; round < 3; round++) {
                List<CompletableFuture<Void>> echoes = new ArrayList<>();
                for (int i = 0; i < sandboxes.size(); i++) {
                    Sandbox s = sandboxes.get(i);
                    byte[] payload = new byte[64 * 1024 + i * 1000 + round];
                    new Random(i * 31L + round).nextBytes(payload);
                    echoes.add(CompletableFuture.runAsync(() -> assertArrayEquals(payload, s.echo(payload),
                            "sandbox " + s.id() + " answered with its own payload"), pool));
                }
                CompletableFuture.allOf(echoes.toArray(CompletableFuture[]::new)).join();
            }
            sandboxes.forEach(Sandbox::close);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    @Tag("fault")
    void qemuKilledMidRequestGivesATypedErrorPromptly() throws Exception {
        QemuSandbox sandbox = (QemuSandbox) backend.start(E2e.config().build());
        byte[] big = new byte[16 << 20];
        new Random(7).nextBytes(big);
        CompletableFuture<Throwable> outcome = CompletableFuture.supplyAsync(() -> {
            try {
                sandbox.echo(big);
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        // Let the request get going (16 MiB through gVisor's port takes seconds), then SIGKILL QEMU.
        await().pollDelay(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5)).until(() -> true);
        ProcessHandle.of(sandbox.pid()).orElseThrow().destroyForcibly();
        Throwable t = outcome.get(2, java.util.concurrent.TimeUnit.MINUTES);
        E2e.log("outcome: " + t);
        assertTrue(t instanceof SandboxLostException, "typed crash error, got " + t);
        assertTrue(t.getMessage().contains("signal 9") || t.getMessage().contains("SIGKILL")
                || t.getMessage().contains("137"), "says how QEMU died: " + t.getMessage());
        assertFalse(sandbox.isAlive());
    }

    @Test
    void requestAboveTheLimitIsRefusedAndTheSandboxGoesOn() {
        try (Sandbox sandbox = backend.start(E2e.config().maxRequestBytes(64 * 1024).build())) {
            assertEquals(ErrorCode.TOO_LARGE, assertThrows(RenderFailedException.class, () -> sandbox.echo(new byte[64 * 1024 + 1])).code());
            byte[] ok = new byte[64 * 1024 - 256];
            assertArrayEquals(ok, sandbox.echo(ok));
        }
    }
}
