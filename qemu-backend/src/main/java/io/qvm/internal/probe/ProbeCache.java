package io.qvm.internal.probe;

import io.qvm.internal.host.QemuCapabilities;
import io.qvm.internal.host.QvmEnvironment;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.qvm.Accelerator;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * Remembers functional-probe verdicts (layer 3, the only expensive layer) in
 * {@code $QVM_CACHE/probe-cache.json} (default {@code ~/.cache/qvm/probe-cache.json}).
 *
 * <p>The key is everything the verdict depends on: host name, OS and kernel release
 * ({@code os.version}), host arch, the QEMU binary's path and version, the machine profile
 * (machine, cpu, accel options), the guest architecture and the probe guest's identity (the
 * kernel's SHA-256). Entries older than {@link #maxAge()} (default 7 days) are ignored: a host
 * can change in ways the key does not see (a kernel module parameter, a hypervisor update).
 *
 * <pre>{@code
 * {"version":1,"entries":{"<key>":{"accelerator":"kvm","passed":false,
 *   "reason":"…","fix":"…","probedAt":"2026-11-30T20:30:00Z"}}}
 * }</pre>
 *
 * <p>It also keeps each QEMU binary's {@link QemuCapabilities} under {@code "qemu"}, keyed by the
 * binary's {@link QemuCapabilityProbe.Identity} (path, size, modification time, version line):
 * these never expire, since a changed binary has another identity.
 *
 * <p>An unreadable or corrupt file is treated as empty (and rewritten); a cache that cannot be
 * written costs a re-probe next time, never a failure. Writes go to a temporary file then an
 * atomic rename, so a concurrent reader sees the old or the new file, never half of one.
 */
public final class ProbeCache {


    private static final ObjectMapper JSON = new ObjectMapper();
    private static final System.Logger LOG = System.getLogger(ProbeCache.class.getName());

    private final Path file;
    private final Duration maxAge;
    private final Clock clock;

    public ProbeCache(Path file, Duration maxAge, Clock clock) {
        this.file = file;
        this.maxAge = maxAge;
        this.clock = clock;
    }

    /** The cache at {@code $QVM_CACHE/probe-cache.json} or {@code ~/.cache/qvm/probe-cache.json}. */
    public static ProbeCache defaultLocation(Map<String, String> env) {
        return new ProbeCache(QvmEnvironment.of(env).probeCacheFile(), Duration.ofDays(7), Clock.systemUTC());
    }

    /** The JSON file. */
    public Path file() {
        return file;
    }

    /** Entries older than this are ignored. */
    public Duration maxAge() {
        return maxAge;
    }

    /** The cached verdict for {@code key}, marked {@link LayerVerdict#cached()}, if fresh. */
    public synchronized Optional<LayerVerdict> get(String key) {
        JsonNode e = read().path("entries").path(key);
        if (!e.isObject()) {
            return Optional.empty();
        }
        try {
            Instant at = Instant.parse(e.path("probedAt").asText());
            if (at.plus(maxAge).isBefore(clock.instant())) {
                return Optional.empty();
            }
            Accelerator a = Accelerator.parse(e.path("accelerator").asText());
            return Optional.of(new LayerVerdict(a, Layer.FUNCTIONAL, e.path("passed").asBoolean(),
                    e.path("reason").asText() + " (probed " + at + ")", e.path("fix").asText(), true));
        } catch (RuntimeException bad) {
            return Optional.empty();
        }
    }

    /** Stores a fresh functional verdict. */
    public synchronized void put(String key, LayerVerdict v) {
        ObjectNode root = read();
        if (!root.path("entries").isObject()) {
            root.putObject("entries");
        }
        ObjectNode e = ((ObjectNode) root.get("entries")).putObject(key);
        e.put("accelerator", v.accelerator().qemuName());
        e.put("passed", v.passed());
        e.put("reason", v.reason());
        e.put("fix", v.fix());
        e.put("probedAt", clock.instant().toString());
        write(root);
    }

    /** The capabilities cached for the QEMU binary whose identity key is {@code identity}. */
    public synchronized Optional<QemuCapabilities> capabilities(String identity) {
        JsonNode c = read().path("qemu").path(identity);
        if (!c.isObject()) {
            return Optional.empty();
        }
        try {
            return Optional.of(QemuCapabilities.fromJson(c));
        } catch (RuntimeException bad) {
            return Optional.empty();
        }
    }

    /** Stores what a QEMU binary answered. */
    public synchronized void putCapabilities(String identity, QemuCapabilities c) {
        ObjectNode root = read();
        if (!root.path("qemu").isObject()) {
            root.putObject("qemu");
        }
        ((ObjectNode) root.get("qemu")).set(identity, c.toJson());
        write(root);
    }

    private void write(ObjectNode root) {
        try {
            Files.createDirectories(file.getParent());
            Path tmp = Files.createTempFile(file.getParent(), file.getFileName().toString(), ".tmp");
            JSON.writerWithDefaultPrettyPrinter().writeValue(tmp.toFile(), root);
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e2) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException io) {
            LOG.log(System.Logger.Level.WARNING, "qvm: cannot write the probe cache " + file + ": " + io.getMessage()
                    + " (the accelerator will be probed again next time)");
        }
    }

    private ObjectNode read() {
        if (Files.isRegularFile(file)) {
            try {
                JsonNode n = JSON.readTree(file.toFile());
                if (n instanceof ObjectNode && n.path("version").asInt() == 1) {
                    return (ObjectNode) n;
                }
            } catch (IOException | RuntimeException corrupt) {
                LOG.log(System.Logger.Level.WARNING, "qvm: ignoring unreadable probe cache " + file + ": "
                        + corrupt.getMessage());
            }
        }
        ObjectNode root = JSON.createObjectNode();
        root.put("version", 1);
        root.putObject("entries");
        return root;
    }
}
