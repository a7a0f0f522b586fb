package io.qvm.backend.template;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.backend.qmp.QmpClient;
import io.qvm.backend.qmp.QmpException;
import io.qvm.protocol.util.Retry;
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
 * Moves a VM's migration stream between QEMU and a file on the host, over a unix socket.
 *
 * <p>Why a socket and not {@code exec:} or {@code file:}: QEMU runs under its seccomp filter
 * with {@code spawn=deny}, which forbids {@code exec:} (it forks a shell); {@code file:} arrived
 * in QEMU 8.2 and Debian 12 ships 7.2. With {@code unix:} QEMU connects to (save) or listens on
 * (restore) a socket in the sandbox's private runtime directory, and the host copies the bytes.
 *
 * <p>In {@code shared-ram} mode the capability {@code x-ignore-shared} is set on both ends: RAM
 * that lives in a {@code share=on} file is left out of the stream (the clone maps the same file),
 * so the stream is only device state — a few hundred KB.
 */
public final class MigrationStream {

    private static final long POLL_MILLIS = 5;
    private static final Duration CONNECT_PAUSE = Duration.ofMillis(2);

    private MigrationStream() {
    }

    /** What a save wrote. */
    public record Saved(long bytes, Duration took) {
    }

    /**
     * Stops the VM and writes its migration stream to {@code stateFile}. The VM stays stopped: the
     * caller quits it (a template must never run again once saved — its clones map its RAM).
     *
     * @throws TemplateException the migration failed or did not complete within {@code timeout}
     */
    public static Saved save(QmpClient qmp, Path socket, Path stateFile, boolean ignoreShared, Duration timeout)
            throws IOException, InterruptedException, QmpException {
        long t0 = System.nanoTime();
        Files.deleteIfExists(socket);
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            CompletableFuture<Long> copied = CompletableFuture.supplyAsync(() -> receive(server, stateFile));
            qmp.execute("stop", null, timeout);
            setIgnoreShared(qmp, ignoreShared, timeout);
            ObjectNode args = JsonNodeFactory.instance.objectNode().put("uri", "unix:" + socket);
            qmp.execute("migrate", args, timeout);
            long bytes;
            try {
                bytes = copied.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                server.close();
                throw new TemplateException("the template's migration stream did not end within "
                        + timeout.toMillis() + " ms");
            } catch (ExecutionException e) {
                throw new TemplateException("receiving the template's migration stream failed: "
                        + e.getCause().getMessage(), e.getCause());
            }
            awaitMigration(qmp, "completed", timeout, "saving the template");
            return new Saved(bytes, Duration.ofNanos(System.nanoTime() - t0));
        } finally {
            Files.deleteIfExists(socket);
        }
    }

    /**
     * Loads {@code stateFile} into a QEMU started with {@code -S -incoming defer} and waits until
     * the VM is restored and paused.
     *
     * @throws TemplateException the stream was refused or the VM did not reach {@code paused}
     */
    public static Duration restore(QmpClient qmp, Path socket, Path stateFile, boolean ignoreShared,
            Duration timeout) throws IOException, InterruptedException, QmpException {
        long t0 = System.nanoTime();
        setIgnoreShared(qmp, ignoreShared, timeout);
        ObjectNode args = JsonNodeFactory.instance.objectNode().put("uri", "unix:" + socket);
        qmp.execute("migrate-incoming", args, timeout);
        try (SocketChannel out = connect(socket, timeout);
                FileChannel in = FileChannel.open(stateFile, StandardOpenOption.READ)) {
            long size = in.size();
            long sent = 0;
            while (sent < size) {
                sent += in.transferTo(sent, size - sent, out);
            }
        }
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

    private static long receive(ServerSocketChannel server, Path stateFile) {
        try (SocketChannel in = server.accept();
                FileChannel out = FileChannel.open(stateFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
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
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static SocketChannel connect(Path socket, Duration timeout) throws IOException, InterruptedException {
        Retry retry = Retry.until(timeout, CONNECT_PAUSE, CONNECT_PAUSE, () -> true);
        while (true) {
            SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            try {
                ch.connect(UnixDomainSocketAddress.of(socket));
                return ch;
            } catch (IOException e) {
                ch.close();
                if (retry.expired()) {
                    throw new TemplateException("QEMU did not listen for the template's state on " + socket
                            + " within " + timeout.toMillis() + " ms: " + e.getMessage());
                }
            }
            retry.pause("connecting to " + socket);
        }
    }
}
