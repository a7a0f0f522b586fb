package io.qvm.internal.template;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.internal.qmp.QmpClient;
import io.qvm.internal.qmp.QmpException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Moves a VM's migration stream between QEMU and a file on the host.
 *
 * <p>Save: QEMU connects to a unix socket the host listens on ({@code migrate unix:…}, see
 * {@link MigrationSocket} for where it lives when QEMU runs as another user) and the host copies
 * the bytes into the file. Restore: QEMU reads the stream from its stdin ({@code migrate-incoming
 * fd:0}), which the host opened on the file when it started QEMU ({@code QemuProcess.Launcher#stdin}),
 * so a QEMU that dropped its privileges needs no access to the file, and no socket of its own.
 *
 * <p>Why these: QEMU runs under its seccomp filter with {@code spawn=deny}, which forbids
 * {@code exec:} (it forks a shell); {@code file:} arrived in QEMU 8.2 and Debian 12 ships 7.2;
 * a named {@code fd:} needs SCM_RIGHTS on the QMP socket, which the JDK's channels cannot send,
 * and QEMU 7.2 takes a numeric {@code fd:} on {@code migrate-incoming} only, not on
 * {@code migrate} ("File descriptor named '1' has not been found", measured).
 *
 * <p>In {@code shared-ram} mode the capability {@code x-ignore-shared} is set on both ends: RAM
 * that lives in a {@code share=on} file is left out of the stream (the clone maps the same file),
 * so the stream is only device state — a few hundred KB.
 */
public final class MigrationStream {

    private static final long POLL_MILLIS = 5;

    private MigrationStream() {
    }

    /** What a save wrote. */
    public record Saved(long bytes, Duration took) {
    }

    /** What a restore's {@code migrate-incoming} is given: QEMU's stdin. */
    public static final String INCOMING_URI = "fd:0";

    /**
     * Stops the VM and writes its migration stream to {@code stateFile}. The VM stays stopped: the
     * caller quits it (a template must never run again once saved — its clones map its RAM).
     * {@code socket} is removed when this returns.
     *
     * @throws TemplateException the migration failed or did not complete within {@code timeout},
     *     or someone else than QEMU's user connected
     */
    public static Saved save(QmpClient qmp, MigrationSocket socket, Path stateFile, boolean ignoreShared,
            Duration timeout) throws IOException, InterruptedException, QmpException {
        long t0 = System.nanoTime();
        try (socket; ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            Files.deleteIfExists(socket.path());
            server.bind(UnixDomainSocketAddress.of(socket.path()));
            socket.grantAccess();
            CompletableFuture<Long> copied = CompletableFuture.supplyAsync(() -> receive(server, socket, stateFile));
            qmp.execute("stop", null, timeout);
            setIgnoreShared(qmp, ignoreShared, timeout);
            ObjectNode args = JsonNodeFactory.instance.objectNode().put("uri", "unix:" + socket.path());
            qmp.execute("migrate", args, timeout);
            long bytes;
            try {
                bytes = awaitCopy(qmp, copied, server, timeout);
            } catch (ExecutionException e) {
                Throwable c = e.getCause() instanceof java.io.UncheckedIOException u ? u.getCause() : e.getCause();
                if (c instanceof TemplateException t) {
                    throw t;
                }
                throw new TemplateException("receiving the template's migration stream failed: " + c.getMessage(), c);
            }
            awaitMigration(qmp, "completed", timeout, "saving the template");
            return new Saved(bytes, Duration.ofNanos(System.nanoTime() - t0));
        }
    }

    /** How long a save waits for the stream before it also asks QEMU whether the migration failed. */
    private static final Duration ASK_AFTER = Duration.ofMillis(500);

    /**
     * The copied byte count once the stream ended. While it runs, QEMU is asked after
     * {@link #ASK_AFTER} (and then every {@value #POLL_MILLIS}0 ms) whether the migration failed — a
     * QEMU that cannot reach the socket fails at once, and says why — instead of waiting for the
     * whole timeout.
     */
    private static long awaitCopy(QmpClient qmp, CompletableFuture<Long> copied, ServerSocketChannel server,
            Duration timeout) throws ExecutionException, InterruptedException, QmpException, IOException {
        long t0 = System.nanoTime();
        while (true) {
            try {
                return copied.get(POLL_MILLIS * 10, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                long waited = System.nanoTime() - t0;
                if (waited > timeout.toNanos()) {
                    server.close();
                    throw new TemplateException("the template's migration stream did not end within "
                            + timeout.toMillis() + " ms");
                }
                if (waited > ASK_AFTER.toNanos()) {
                    JsonNode r = qmp.execute("query-migrate", null, timeout);
                    String status = r.path("status").asText("");
                    if (status.equals("failed") || status.equals("cancelled")) {
                        server.close();
                        throw new TemplateException("saving the template failed: migration " + status + " ("
                                + r.path("error-desc").asText("no reason given") + ")");
                    }
                }
            }
        }
    }

    /**
     * Has a QEMU started with {@code -S -incoming defer} and the template's state file on its
     * stdin load that stream ({@value #INCOMING_URI}), and waits until the VM is restored and
     * paused.
     *
     * @throws TemplateException the stream was refused or the VM did not reach {@code paused}
     */
    public static Duration restore(QmpClient qmp, boolean ignoreShared, Duration timeout)
            throws InterruptedException, QmpException {
        long t0 = System.nanoTime();
        setIgnoreShared(qmp, ignoreShared, timeout);
        ObjectNode args = JsonNodeFactory.instance.objectNode().put("uri", INCOMING_URI);
        qmp.execute("migrate-incoming", args, timeout);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            String status = qmp.execute("query-status", null, timeout).path("status").asText();
            if (status.equals("paused") || status.equals("prelaunch")) {
                // a -S VM whose incoming migration finished reads "paused"
                JsonNode mig = qmp.execute("query-migrate", null, timeout);
                String ms = mig.path("status").asText("");
                if (ms.equals("completed") || ms.isEmpty()) {
                    return Duration.ofNanos(System.nanoTime() - t0);
                }
                if (ms.equals("failed")) {
                    throw new TemplateException("QEMU refused the template's state: "
                            + mig.path("error-desc").asText("no reason given"));
                }
            }
            if (!status.equals("inmigrate") && !status.equals("paused") && !status.equals("prelaunch")) {
                throw new TemplateException("the clone is '" + status + "' after loading the template's state, "
                        + "not paused");
            }
            if (System.nanoTime() > deadline) {
                throw new TemplateException("the clone did not finish loading the template's state within "
                        + timeout.toMillis() + " ms");
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    private static void setIgnoreShared(QmpClient qmp, boolean ignoreShared, Duration timeout)
            throws QmpException, InterruptedException {
        if (!ignoreShared) {
            return;
        }
        ObjectNode cap = JsonNodeFactory.instance.objectNode().put("capability", "x-ignore-shared").put("state", true);
        ObjectNode args = JsonNodeFactory.instance.objectNode();
        args.putArray("capabilities").add(cap);
        qmp.execute("migrate-set-capabilities", args, timeout);
    }

    private static void awaitMigration(QmpClient qmp, String wanted, Duration timeout, String what)
            throws QmpException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            JsonNode r = qmp.execute("query-migrate", null, timeout);
            String status = r.path("status").asText("");
            if (status.equals(wanted)) {
                return;
            }
            if (status.equals("failed") || status.equals("cancelled")) {
                throw new TemplateException(what + " failed: migration " + status + " ("
                        + r.path("error-desc").asText("no reason given") + ")");
            }
            if (System.nanoTime() > deadline) {
                throw new TemplateException(what + ": migration still '" + status + "' after " + timeout.toMillis()
                        + " ms");
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    private static long receive(ServerSocketChannel server, MigrationSocket socket, Path stateFile) {
        try (SocketChannel in = server.accept()) {
            socket.checkPeer(in);
            return copy(in, stateFile);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static long copy(SocketChannel in, Path stateFile) throws IOException {
        try (FileChannel out = FileChannel.open(stateFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            long total = 0;
            java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocateDirect(1 << 20);
            while (in.read(buf) >= 0) {
                buf.flip();
                while (buf.hasRemaining()) {
                    total += out.write(buf);
                }
                buf.clear();
            }
            out.force(true);
            return total;
        }
    }
}
