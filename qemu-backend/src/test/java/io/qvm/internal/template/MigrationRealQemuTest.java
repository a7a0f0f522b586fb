package io.qvm.internal.template;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import io.qvm.internal.host.Posix;
import io.qvm.internal.process.QemuProcess;
import io.qvm.internal.process.QemuUser;
import io.qvm.internal.process.StopLadder;
import io.qvm.internal.qemu.QemuCommand;
import io.qvm.internal.qmp.QmpClient;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A template's save and a clone's restore with a real {@code qemu-system-x86_64 -M none} (no
 * guest, no accelerator), under QEMU's seccomp filter and — when the test runs as root — with
 * QEMU dropped to {@code nobody} by {@code -runas}, as a root backend runs it: the save reaches a
 * {@link MigrationSocket#reachableBy hand-over socket} after the drop, the restore reads the
 * state from QEMU's stdin. Skipped only when the binary is not installed.
 */
@Tag("unit")
@Tag("qemu")
@Tag("security")
class MigrationRealQemuTest {

    private static final Duration LONG = Duration.ofSeconds(60);
    /** The first bytes of every QEMU migration stream ({@code QEMU_VM_FILE_MAGIC}). */
    private static final byte[] QEVM = "QEVM".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path tmp;

    private final List<QemuProcess> started = new ArrayList<>();

    @AfterEach
    void stopQemus() {
        started.forEach(q -> q.stop(StopLadder.signalsOnly()));
    }

    static String qemuBinary() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir, "qemu-system-x86_64");
            if (Files.isExecutable(p)) {
                return p.toString();
            }
        }
        return null;
    }

    /** As root: nobody, the user a root backend's QEMU would drop to here; else none (QEMU keeps our user). */
    private static Optional<QemuUser.Account> dropTo() {
        if (Posix.currentUid() != 0) {
            return Optional.empty();
        }
        return QemuUser.Accounts.system().find("nobody");
    }

    private QemuProcess qemu(String name, Optional<QemuUser.Account> user, Optional<Path> stdin, String... extra)
            throws Exception {
        String binary = qemuBinary();
        assumeTrue(binary != null, "qemu-system-x86_64 is not on PATH; install package qemu-system-x86 to run this test");
        List<String> argv = new ArrayList<>(List.of(binary, "-M", "none", "-nodefaults", "-no-user-config",
                "-display", "none", "-qmp", "unix:" + tmp.resolve(name + ".sock") + ",server=on,wait=off"));
        argv.addAll(Arrays.asList(extra));
        if (user.isPresent()) {
            // QEMU 9.1 deprecated -runas for -run-with user= (Debian's 10.0 has no -runas at all)
            String name0 = user.get().name();
            argv.addAll(versionOf(binary).atLeast(9, 1) ? List.of("-run-with", "user=" + name0) : List.of("-runas", name0));
        }
        argv.addAll(List.of("-sandbox", user.isPresent() ? QemuCommand.SECCOMP_RUNAS : QemuCommand.SECCOMP));
        QemuProcess.Launcher l = QemuProcess.launcher(argv).stdout(tmp.resolve(name + ".out"))
                .stderr(tmp.resolve(name + ".err"));
        stdin.ifPresent(l::stdin);
        QemuProcess p = l.start();
        started.add(p);
        return p;
    }

    private static io.qvm.internal.host.QemuVersion versionOf(String binary) throws Exception {
        Process p = new ProcessBuilder(binary, "-version").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        p.waitFor();
        return io.qvm.internal.host.QemuVersion.parse(out);
    }

    private QmpClient qmp(String name, QemuProcess p) throws Exception {
        return QmpClient.builder(tmp.resolve(name + ".sock")).connectTimeout(LONG).commandTimeout(LONG)
                .processAlive(p::isAlive).connect();
    }

    private static int uidOf(QemuProcess p) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(p.pid()), "status"))) {
            if (line.startsWith("Uid:")) {
                return Integer.parseInt(line.split("\\s+")[2]); // effective uid
            }
        }
        throw new IOException("no Uid line for pid " + p.pid());
    }

    @Test
    void aTemplateIsSavedAndRestoredByAQemuThatDroppedItsPrivileges() throws Exception {
        Optional<QemuUser.Account> user = dropTo();
        Path state = tmp.resolve("state");

        QemuProcess template = qemu("template", user, Optional.empty());
        try (QmpClient q = qmp("template", template)) {
            user.ifPresent(u -> assertUid(u, template));
            MigrationSocket socket = user.isPresent() ? MigrationSocket.reachableBy(user.get())
                    : MigrationSocket.inPrivateDirectory(tmp.resolve("migrate.sock"));
            MigrationStream.Saved saved = MigrationStream.save(q, socket, state, true, LONG);
            assertTrue(saved.bytes() > QEVM.length, saved.toString());
            assertArrayEquals(QEVM, Arrays.copyOf(Files.readAllBytes(state), QEVM.length), "a QEMU migration stream");
            assertFalse(Files.exists(socket.path()), "the hand-over socket is gone");
            q.quit(LONG);
        }

        QemuProcess clone = qemu("clone", user, Optional.of(state), "-S", "-incoming", "defer");
        try (QmpClient q = qmp("clone", clone)) {
            user.ifPresent(u -> assertUid(u, clone));
            MigrationStream.restore(q, true, LONG);
            assertEquals("completed", q.execute("query-migrate", null, LONG).path("status").asText());
            assertEquals("paused", q.execute("query-status", null, LONG).path("status").asText());
            q.quit(LONG);
        }
        assertEquals(0, clone.onExit().get().exitCode(), clone.stderrTail(4096));
    }

    @Test
    void aDroppedQemuCannotReachTheSandboxsPrivateDirectoryWhichIsWhyTheSaveHandsOverElsewhere() throws Exception {
        Optional<QemuUser.Account> user = dropTo();
        assumeTrue(user.isPresent(), "only a root test can have QEMU drop to another user");
        QemuProcess template = qemu("template", user, Optional.empty());
        try (QmpClient q = qmp("template", template)) {
            // the private 0700 directory of root, as the sandbox's runtime directory is
            MigrationSocket privateToRoot = MigrationSocket.inPrivateDirectory(tmp.resolve("migrate.sock"));
            TemplateException e = org.junit.jupiter.api.Assertions.assertThrows(TemplateException.class,
                    () -> MigrationStream.save(q, privateToRoot, tmp.resolve("state"), true, LONG));
            assertTrue(e.getMessage().contains("migration failed") && e.getMessage().contains("Permission denied"),
                    e.getMessage());
            q.quit(LONG);
        }
    }

    private static void assertUid(QemuUser.Account u, QemuProcess p) {
        try {
            assertEquals(u.uid(), uidOf(p), "QEMU runs as " + u.name() + " once it is up");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
