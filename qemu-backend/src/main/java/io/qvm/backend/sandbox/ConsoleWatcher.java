package io.qvm.backend.sandbox;

import io.qvm.protocol.image.ConsoleMarkers;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Follows the guest console file QEMU writes and picks out the init's one-line markers
 * ({@link ConsoleMarkers}):
 *
 * <pre>
 * qvm: phase=&lt;name&gt; uptime=&lt;seconds&gt;      a boot phase and the guest's uptime
 * qvm: phase=worker-exit status=&lt;n&gt; …      the worker ended
 * qvm: error=&lt;text&gt;                       the init failed
 * </pre>
 *
 * Lines are read as they are appended (polled; QEMU writes the file itself), capped at 4 KiB each
 * so a guest that prints without newlines cannot grow memory. Closing stops the poller.
 */
public final class ConsoleWatcher implements AutoCloseable {

    private static final int MAX_LINE = 4096;

    private final Path file;
    private final long startNanos;
    private final Consumer<String> progress;
    private final ScheduledExecutorService poller;
    private final Map<String, Duration> guestPhases = new LinkedHashMap<>();
    private final Map<String, Duration> hostSeen = new LinkedHashMap<>();
    private final StringBuilder line = new StringBuilder();
    private long offset;
    private volatile long lastGrowthNanos = System.nanoTime();
    private volatile String error;
    private volatile Integer workerExitStatus;

    /**
     * @param startNanos {@link System#nanoTime()} when QEMU started, for host-side arrival times
     * @param progress receives one line per phase (may be a no-op)
     */
    public ConsoleWatcher(Path file, long startNanos, Consumer<String> progress) {
        this.file = file;
        this.startNanos = startNanos;
        this.progress = progress;
        this.poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "qvm-console-" + file.getParent().getFileName());
            t.setDaemon(true);
            return t;
        });
        poller.scheduleWithFixedDelay(this::poll, 0, 50, TimeUnit.MILLISECONDS);
    }

    /** Guest phases in order, each with the guest uptime the init printed. */
    public synchronized Map<String, Duration> guestPhases() {
        return new LinkedHashMap<>(guestPhases);
    }

    /** Guest phases in order, each with when the host saw the line (since QEMU started). */
    public synchronized Map<String, Duration> hostArrival() {
        return new LinkedHashMap<>(hostSeen);
    }

    /** Whether the guest printed the marker of {@code phase}. */
    public synchronized boolean reached(String phase) {
        return hostSeen.containsKey(phase);
    }

    /** How long the console has not grown (since this watcher started, if it never did). */
    public Duration silentFor() {
        return Duration.ofNanos(System.nanoTime() - lastGrowthNanos);
    }

    /** The init's error line, once one was printed. */
    public Optional<String> error() {
        return Optional.ofNullable(error);
    }

    /** The worker's exit status, once the init reported it. */
    public Optional<Integer> workerExitStatus() {
        return Optional.ofNullable(workerExitStatus);
    }

    /** Reads whatever was appended since the last poll (also called by the poller). */
    public synchronized void poll() {
        if (!Files.isRegularFile(file)) {
            return;
        }
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r")) {
            long len = raf.length();
            if (len < offset) {
                offset = 0; // truncated: start over
            }
            raf.seek(offset);
            byte[] buf = new byte[8192];
            int n;
            while ((n = raf.read(buf)) > 0) {
                offset += n;
                lastGrowthNanos = System.nanoTime();
                for (int i = 0; i < n; i++) {
                    char c = (char) (buf[i] & 0xFF);
                    if (c == '\n') {
                        onLine(line.toString());
                        line.setLength(0);
                    } else if (c != '\r' && line.length() < MAX_LINE) {
                        line.append(c);
                    }
                }
            }
        } catch (IOException e) {
            // The file vanished or is unreadable for a moment; the next poll tries again.
        }
    }

    private void onLine(String raw) {
        String s = new String(raw.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
        ConsoleMarkers.parse(s).ifPresent(this::onMarker);
    }

    private void onMarker(ConsoleMarkers.Marker m) {
        if (m.error().isPresent()) {
            error = m.error().get();
            progress.accept("guest init failed: " + error);
            return;
        }
        String name = m.phase().orElseThrow();
        Duration host = Duration.ofNanos(System.nanoTime() - startNanos);
        hostSeen.putIfAbsent(name, host);
        String uptime = m.uptime().orElse(null);
        if (uptime != null) {
            guestPhases.putIfAbsent(name, Duration.ofNanos((long) (Double.parseDouble(uptime) * 1e9)));
        }
        m.status().ifPresent(st -> workerExitStatus = st);
        progress.accept("guest: " + name + (uptime == null ? "" : " (guest uptime " + uptime + " s)"));
    }

    @Override
    public void close() {
        poller.shutdownNow();
        poll();
    }
}
