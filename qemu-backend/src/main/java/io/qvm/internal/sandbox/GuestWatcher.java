package io.qvm.internal.sandbox;

import io.qvm.protocol.image.InitEvents;
import io.qvm.protocol.image.InitEvents.Phase;
import io.qvm.protocol.util.ControlChars;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Follows the two files QEMU writes for a guest: the init's events ({@link InitEvents}, on a port
 * only the init holds) and the console (kernel, init and — capped by the init — runsc's and the
 * worker's stderr).
 *
 * <p>Only the events file says what happened: each line is taken when it is exactly one known
 * event, a phase only after every earlier phase of the contract and only once, the worker's
 * status only as 0..255, the first error only, sanitised and capped at {@link #MAX_ERROR_CHARS}.
 * Anything else is counted as a {@link #violations() violation} and dropped. At most
 * {@link #MAX_EVENT_BYTES} of it are read. So the state this keeps is bounded by the contract,
 * whatever the guest writes, and a line the worker prints on the console (a forged phase or exit
 * status) is never an event.
 *
 * <p>The console is only watched: how long it has been silent (the boot's stall watch). It is
 * never parsed.
 *
 * <p>Both files have a cap on their size, checked the same way for both on every poll, for the
 * whole life of the sandbox (not only its boot, and whether or not anyone reads them): the
 * console's ({@code maxConsoleBytes}, above what the init lets through) and the events file's
 * ({@link #MAX_EVENT_BYTES}, far above the contract's events). QEMU writes both (a file chardev),
 * so the host cannot refuse a byte; it can only notice the growth and stop the VM. A file past its
 * cap means a guest that does not follow the contract — its init or kernel is not the one qvm
 * built — so {@code onOverflow} runs once, for whichever file passes first, and the sandbox's owner
 * stops the VM; {@link #overflow()} says which cap it was.
 *
 * <p>Both files are polled every {@link #POLL_MILLIS} ms; closing stops the poller. The cap is a
 * bound on the disk a guest takes, not an exact size: between two polls the guest goes on writing
 * at the speed of its serial or virtio-serial port (about 100 MB/s), so a file can end up to about
 * 5 MB past its cap (100 MB/s × 50 ms), plus what the guest writes while one poll runs and while
 * QEMU dies of SIGKILL (milliseconds). The overshoot grows with any delay of the poller (a host
 * so busy that it ran a second late: about 100 MB).
 */
public final class GuestWatcher implements AutoCloseable {

    /**
     * The events file's cap, and the most of it that is read: the contract's events take well
     * under 1 KiB, so a file past this was written by a guest that does not follow the contract.
     */
    public static final int MAX_EVENT_BYTES = 64 * 1024;
    /** How often both files are looked at (see the class comment for the overshoot this allows). */
    public static final long POLL_MILLIS = 50;
    /** The init's error text is kept up to this many characters. */
    public static final int MAX_ERROR_CHARS = 512;

    private final Path events;
    private final CappedFile eventsCap;
    private final CappedFile consoleCap;
    private volatile CappedFile archiveCap;
    private final Runnable onOverflow;
    private final long startNanos;
    private final Consumer<String> progress;
    private final ScheduledExecutorService poller;
    private final Map<Phase, Duration> guestPhases = new EnumMap<>(Phase.class);
    private final Map<Phase, Duration> hostSeen = new EnumMap<>(Phase.class);
    private final StringBuilder line = new StringBuilder();
    private boolean lineTooLong;
    private long eventsOffset;
    private volatile String error;
    private volatile Integer workerExitStatus;
    private volatile Long archiveBytes;
    private volatile String overflow;
    private volatile int violations;

    /**
     * @param events the events file ({@code -chardev file} of the {@code qvm.events} port)
     * @param console the console file
     * @param maxConsoleBytes the console's cap, in bytes (the events file's is {@link #MAX_EVENT_BYTES})
     * @param onOverflow runs once (on the poller, or on a thread calling {@link #poll()}) when either
     *     file passes its cap: it stops the VM
     * @param startNanos {@link System#nanoTime()} when QEMU started, for host-side arrival times
     * @param progress receives one line per event (may be a no-op); at most one per phase, one
     *     error and one overflow, so a log it writes is bounded too
     */
    public GuestWatcher(Path events, Path console, long maxConsoleBytes, Runnable onOverflow, long startNanos,
            Consumer<String> progress) {
        this.events = events;
        this.eventsCap = new CappedFile("the init's events file", events, MAX_EVENT_BYTES);
        this.consoleCap = new CappedFile("the guest console", console, maxConsoleBytes);
        this.onOverflow = onOverflow;
        this.startNanos = startNanos;
        this.progress = progress;
        this.poller = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "qvm-guest-" + events.getParent().getFileName());
            t.setDaemon(true);
            return t;
        });
        poller.scheduleWithFixedDelay(this::pollQuietly, 0, POLL_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** Guest phases in order, each with the guest uptime the init reported, by phase id. */
    public synchronized Map<String, Duration> guestPhases() {
        Map<String, Duration> m = new LinkedHashMap<>();
        guestPhases.forEach((p, d) -> m.put(p.id(), d));
        return m;
    }

    /** Guest phases in order, each with when the host saw the event (since QEMU started). */
    public synchronized Map<String, Duration> hostArrival() {
        Map<String, Duration> m = new LinkedHashMap<>();
        hostSeen.forEach((p, d) -> m.put(p.id(), d));
        return m;
    }

    /** Whether the init reported {@code phase}. */
    public synchronized boolean reached(Phase phase) {
        return hostSeen.containsKey(phase);
    }

    /** How long the console has not grown (since this watcher started, if it never did). */
    public Duration silentFor() {
        return Duration.ofNanos(System.nanoTime() - consoleCap.lastGrowthNanos);
    }

    /** The init's error (sanitised, capped), once it reported one. */
    public Optional<String> error() {
        return Optional.ofNullable(error);
    }

    /** The size of the class archive the init wrote to its port, once it reported it (adr/0018). */
    public Optional<Long> archiveBytes() {
        return Optional.ofNullable(archiveBytes);
    }

    /** The worker's exit status (0..255), once the init reported it. */
    public Optional<Integer> workerExitStatus() {
        return Optional.ofNullable(workerExitStatus);
    }

    /**
     * Which file passed its cap, once one did (then the VM was stopped), in words: "the init's
     * events file passed its cap of 65536 bytes".
     */
    public Optional<String> overflow() {
        return Optional.ofNullable(overflow);
    }

    /** Lines of the events file that were not a next event of the contract (dropped). */
    public int violations() {
        return violations;
    }

    /**
     * Caps {@code file} too, for the rest of this watcher's life: the class archive a boot makes
     * (adr/0018), whose port stays behind that file while the VM runs.
     */
    public synchronized void capArchive(Path file, long maxBytes) {
        archiveCap = new CappedFile("the class archive file", file, maxBytes);
    }

    /** Checks every cap and reads whatever was appended since the last poll (also called by the poller). */
    public synchronized void poll() {
        consoleCap.check();
        eventsCap.check();
        CappedFile archive = archiveCap;
        if (archive != null) {
            archive.check();
        }
        pollEvents();
    }

    private void pollQuietly() {
        try {
            poll();
        } catch (RuntimeException e) {
            // Never let the poller die: the next poll tries again (the state above stays valid).
            violations++;
        }
    }

    /**
     * A file QEMU writes for the guest, and its cap: its size is looked at on every poll (not what
     * was read of it), so a guest writing while nobody reads is seen as soon as one that is read.
     */
    private final class CappedFile {
        private final String what;
        private final Path file;
        private final long maxBytes;
        private long size = -1;
        private volatile long lastGrowthNanos = System.nanoTime();

        CappedFile(String what, Path file, long maxBytes) {
            this.what = what;
            this.file = file;
            this.maxBytes = maxBytes;
        }

        /** Called under the watcher's lock. */
        void check() {
            long now;
            try {
                now = Files.size(file);
            } catch (IOException e) {
                return; // not there yet, or gone: the next poll looks again
            }
            if (now != size) {
                size = now;
                lastGrowthNanos = System.nanoTime();
            }
            if (now > maxBytes && overflow == null) {
                overflow = what + " passed its cap of " + maxBytes + " bytes";
                progress.accept(overflow + ": stopping the VM");
                onOverflow.run();
            }
        }
    }

    private void pollEvents() {
        if (eventsOffset >= MAX_EVENT_BYTES || !Files.isRegularFile(events)) {
            return;
        }
        try (RandomAccessFile raf = new RandomAccessFile(events.toFile(), "r")) {
            raf.seek(eventsOffset);
            byte[] buf = new byte[4096];
            int n;
            while (eventsOffset < MAX_EVENT_BYTES
                    && (n = raf.read(buf, 0, (int) Math.min(buf.length, MAX_EVENT_BYTES - eventsOffset))) > 0) {
                eventsOffset += n;
                for (int i = 0; i < n; i++) {
                    byte b = buf[i];
                    if (b == '\n') {
                        if (lineTooLong) {
                            violations++;
                        } else {
                            onLine(line.toString());
                        }
                        line.setLength(0);
                        lineTooLong = false;
                    } else if (line.length() < InitEvents.MAX_LINE) {
                        line.append((char) (b & 0xFF));
                    } else {
                        lineTooLong = true;
                    }
                }
            }
            if (eventsOffset >= MAX_EVENT_BYTES) {
                violations++;
            }
        } catch (IOException e) {
            // Unreadable for a moment; the next poll tries again.
        }
    }

    private void onLine(String latin1) {
        String s = new String(latin1.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
        Optional<InitEvents.Event> parsed = InitEvents.parse(s);
        if (parsed.isEmpty()) {
            violations++;
            return;
        }
        InitEvents.Event e = parsed.get();
        if (e.error().isPresent()) {
            if (error != null) {
                violations++;
                return;
            }
            String text = ControlChars.escape(e.error().get());
            error = text.length() > MAX_ERROR_CHARS ? text.substring(0, MAX_ERROR_CHARS) + "…" : text;
            progress.accept("guest init failed: " + error);
            return;
        }
        Phase p = e.phase().orElseThrow();
        boolean inOrder = hostSeen.keySet().stream().allMatch(seen -> seen.ordinal() < p.ordinal());
        if (!inOrder) {
            violations++;
            return;
        }
        hostSeen.put(p, Duration.ofNanos(System.nanoTime() - startNanos));
        Duration uptime = Duration.ofNanos(e.uptimeNanos());
        guestPhases.put(p, uptime);
        e.status().ifPresent(st -> workerExitStatus = st);
        e.bytes().ifPresent(b -> archiveBytes = b);
        progress.accept("guest: " + p.id() + e.status().map(st -> " status " + st).orElse("")
                + e.bytes().map(b -> " " + b + " bytes").orElse("")
                + " (guest uptime " + seconds(uptime) + " s)");
    }

    private static String seconds(Duration d) {
        return String.format(java.util.Locale.ROOT, "%.2f", d.toNanos() / 1e9);
    }

    @Override
    public void close() {
        poller.shutdownNow();
        poll();
    }
}
