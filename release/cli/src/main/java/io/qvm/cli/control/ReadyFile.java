package io.qvm.cli.control;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code ready.json}: what a CLI-hosted sandbox's supervisor writes into the sandbox's state
 * directory once the worker answered READY and the control socket listens. Its presence is what
 * makes a sandbox "running" for {@code qvm ps}, {@code render} and {@code down}; the supervisor
 * removes it when it stops.
 *
 * <pre>
 * {"format": 1, "id": "k3v9x2m4q7ab", "supervisorPid": 4242,
 *  "supervisorStartedAt": "2026-11-30T20:06:33.800Z", "detached": true,
 *  "controlSocket": "/tmp/qvm-1000/k3v9x2m4q7ab/ctl.sock", "qemuPid": 4300,
 *  "accelerator": "tcg", "machine": "microvm", "transport": "serial",
 *  "bootMillis": {"process-start": 0, "qmp-ready": 80, …, "worker-ready": 14210},
 *  "notes": ["…"], "readyAt": "2026-11-30T20:06:49.100Z",
 *  "supervisorLog": "/home/u/.local/state/qvm/sandboxes/k3v9x2m4q7ab/supervisor.log",
 *  "maxRequestBytes": 33554432, "maxResponseBytes": 67108864, "requestTimeoutMillis": 60000,
 *  "mode": "fresh-per-render", "freshSandboxes": "restored", "idleTimeoutSeconds": 1800,
 *  "maxLifetimeSeconds": 86400}
 * </pre>
 *
 * For a {@code fresh-per-render} session {@code id} is the session's (its own state directory,
 * which holds no QEMU: {@code qemuPid} is null), and the boot fields are those of its first
 * sandbox; each render's sandbox has its own id. A file without {@code mode} (an older qvm's) is
 * a reused sandbox.
 *
 * @param supervisorLog null for a foreground {@code qvm up}
 * @param qemuPid null when unknown (and for a fresh-per-render session)
 * @param mode {@link ControlTarget#FRESH_PER_RENDER} or {@link ControlTarget#REUSED} (null: reused)
 * @param freshSandboxes for fresh-per-render: {@code restored} (from a template) or {@code cold-booted}
 * @param idleTimeoutSeconds the session ends after this long without a request; null: never
 * @param maxLifetimeSeconds the session ends this long after it became ready; null: never
 */
public record ReadyFile(int format, String id, long supervisorPid, String supervisorStartedAt, boolean detached,
        String controlSocket, Long qemuPid, String accelerator, String machine, String transport,
        Map<String, Long> bootMillis, List<String> notes, String readyAt, String supervisorLog,
        long maxRequestBytes, long maxResponseBytes, long requestTimeoutMillis, String mode, String freshSandboxes,
        Long idleTimeoutSeconds, Long maxLifetimeSeconds) {

    public static final String FILE_NAME = "ready.json";
    public static final int FORMAT = 1;
    /** ready.json is small; a bigger file is not ours. */
    static final int MAX_BYTES = 256 * 1024;

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    public ReadyFile {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(controlSocket, "controlSocket");
        bootMillis = bootMillis == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(bootMillis));
        notes = notes == null ? List.of() : List.copyOf(notes);
    }

    /** Whether every render gets a sandbox of its own (else one sandbox serves them all). */
    @com.fasterxml.jackson.annotation.JsonIgnore
    public boolean freshPerRender() {
        return ControlTarget.FRESH_PER_RENDER.equals(mode);
    }

    /** Writes {@code dir/ready.json} atomically (temp file + rename). */
    public void writeTo(Path dir) throws IOException {
        Path tmp = Files.createTempFile(dir, ".ready", ".tmp");
        try {
            Files.write(tmp, JSON.writeValueAsBytes(this));
            try {
                Files.move(tmp, dir.resolve(FILE_NAME), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, dir.resolve(FILE_NAME), StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** {@code dir/ready.json}, if it exists and parses; a damaged file reads as absent. */
    public static Optional<ReadyFile> read(Path dir) {
        try (InputStream in = Files.newInputStream(dir.resolve(FILE_NAME))) {
            byte[] bytes = in.readNBytes(MAX_BYTES + 1);
            if (bytes.length > MAX_BYTES) {
                return Optional.empty();
            }
            ReadyFile r = JSON.readValue(bytes, ReadyFile.class);
            return r.format() == FORMAT ? Optional.of(r) : Optional.empty();
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** Removes {@code dir/ready.json} if present. */
    public static void delete(Path dir) {
        try {
            Files.deleteIfExists(dir.resolve(FILE_NAME));
        } catch (IOException ignored) {
            // the directory is on its way out anyway
        }
    }
}
