package io.qvm.worker;

import io.qvm.protocol.Messages;
import io.qvm.protocol.Frame;
import io.qvm.protocol.FrameLimits;
import io.qvm.protocol.FrameReader;
import io.qvm.protocol.FrameWriter;
import io.qvm.protocol.Hello;
import io.qvm.protocol.Limits;
import io.qvm.protocol.Ready;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The real worker ({@link Main}) in a child JVM, spoken to over its real stdin and stdout, as the
 * guest runs it. Its stderr is collected for assertions and failure messages.
 */
final class ChildWorker implements AutoCloseable {

    /** Limits generous enough for the corpus, small enough to test the byte limits. */
    static final Limits LIMITS = new Limits(4 << 20, 8 << 20, 4_000_000, 4000, 20, 20_000);

    private final Process process;
    private final OutputStream stdin;
    private final FrameReader reader;
    private final FrameWriter writer;
    private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    private final Thread stderrPump;

    private ChildWorker(Process process) {
        this.process = process;
        this.stdin = process.getOutputStream();
        this.reader = new FrameReader(process.getInputStream(), FrameLimits.ofBody(FrameLimits.BODY_CEILING));
        this.writer = new FrameWriter(stdin, FrameLimits.ofBody(FrameLimits.BODY_CEILING));
        InputStream err = process.getErrorStream();
        this.stderrPump = new Thread(() -> {
            byte[] buf = new byte[4096];
            try {
                for (int n; (n = err.read(buf)) > 0; ) {
                    synchronized (stderr) {
                        stderr.write(buf, 0, n);
                    }
                }
            } catch (IOException ignored) {
                // process gone
            }
        }, "child-stderr");
        stderrPump.setDaemon(true);
        stderrPump.start();
    }

    /** Starts {@code java [jvmArgs] -cp <test classpath> io.qvm.worker.Main}. */
    static ChildWorker start(String... jvmArgs) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaExecutable());
        cmd.add("-Xmx256m");
        cmd.addAll(List.of(jvmArgs));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        return new ChildWorker(new ProcessBuilder(cmd).start());
    }

    /** Speaks to an already started worker process. */
    static ChildWorker attach(Process process) {
        return new ChildWorker(process);
    }

    /** Starts {@code java [jvmArgs] -jar <jar>}. */
    static ChildWorker startJar(Path jar, String... jvmArgs) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaExecutable());
        cmd.add("-Xmx256m");
        cmd.addAll(List.of(jvmArgs));
        cmd.add("-jar");
        cmd.add(jar.toString());
        return new ChildWorker(new ProcessBuilder(cmd).start());
    }

    static String javaExecutable() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Sends HELLO with {@code limits} and returns the READY (frames before it are an error). */
    Ready handshake(Limits limits) throws IOException {
        Hello hello = Hello.fresh(limits);
        send(Messages.toFrame(hello));
        Frame f = receive();
        Ready ready = Messages.ready(f);
        if (!ready.nonce().equals(hello.nonce())) {
            throw new IllegalStateException("READY carries another nonce");
        }
        return ready;
    }

    void send(Frame f) throws IOException {
        writer.write(f);
    }

    /** Raw bytes onto the worker's stdin. */
    void sendRaw(byte[] bytes) throws IOException {
        stdin.write(bytes);
        stdin.flush();
    }

    /** The next frame; fails if stdout ends first. */
    Frame receive() throws IOException {
        Frame f = reader.read();
        if (f == null) {
            throw new IOException("worker's stdout ended; stderr:\n" + stderr());
        }
        return f;
    }

    /** Closes the worker's stdin (EOF). */
    void closeStdin() throws IOException {
        stdin.close();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Waits for the exit status; -1 on timeout. */
    int waitFor(long seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            return -1;
        }
        return process.exitValue();
    }

    /** Frames left on stdout after the worker exited ({@code null} if none). */
    Frame receiveOrEnd() throws IOException {
        return reader.read();
    }

    String stderr() {
        try {
            stderrPump.join(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (stderr) {
            return stderr.toString(StandardCharsets.UTF_8);
        }
    }

    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The shaded jar, if {@code mvn package} built it. */
    static Path shadedJar() {
        return new File("target/renderer-worker.jar").toPath();
    }

    static boolean shadedJarExists() {
        return Files.isRegularFile(shadedJar());
    }
}
