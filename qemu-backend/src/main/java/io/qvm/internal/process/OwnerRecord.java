package io.qvm.internal.process;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Objects;

/**
 * The contents of {@code owner.json}: who started a sandbox's QEMU, so that a later process can
 * tell whether that owner is gone and whether a pid still belongs to that QEMU.
 *
 * <pre>
 * {"format": 1, "sandboxId": "k3v9x2m4q7ab", "hostName": "build-7",
 *  "ownerPid": 4242, "ownerStartedAt": "2026-11-30T20:06:33.800Z", "createdAt": "2026-11-30T20:07:01.120Z",
 *  "qemuBinary": "qemu-system-x86_64", "runtimeDir": "/tmp/qvm-0/k3v9x2m4q7ab",
 *  "qemuPid": 4300, "qemuStartedAt": "2026-11-30T20:07:01.200Z",
 *  "qemuExecutable": "/usr/bin/qemu-system-x86_64", "ownerProgram": "qvm-cli",
 *  "hostId": "macos:564D8F3B-0C6E-4B52-9C1A-6D2E0F1A2B3C"}
 * </pre>
 *
 * {@code hostId} ({@link HostIdentity}) is absent in records of an older qvm; those are matched by
 * {@code hostName}, as before.
 *
 * @param sandboxId the sandbox id (also the state directory's name)
 * @param hostName the host the owner ran on; other hosts' records are never reaped
 * @param ownerPid the owner JVM's pid
 * @param ownerStartedAt the owner's start instant (guards against pid reuse), or null if unknown
 * @param createdAt when the record was created
 * @param qemuBinary argv[0] of the QEMU command line
 * @param runtimeDir the sandbox's socket directory, or null
 * @param qemuPid QEMU's pid once known, or null
 * @param qemuStartedAt QEMU's start instant once known, or null
 * @param qemuExecutable the path of QEMU's executable as the OS reported it right after the launch
 *     ({@code /proc/<pid>/exe} on Linux, the image path on Windows), or null (unknown, or a record
 *     of an older qvm): with the start instant, what identifies an orphaned QEMU where the OS
 *     gives no command line (Windows)
 * @param ownerProgram what the owner is, as it said itself ({@value #PROGRAM_PROPERTY}; the qvm CLI
 *     says {@code qvm-cli}), or null: how {@code qvm down} knows a live owner is the CLI where the OS
 *     gives no command line to read it from (Windows)
 * @param hostId the owner's host's stable identifier ({@link HostIdentity#id()}), or null
 */
public record OwnerRecord(
        String sandboxId,
        String hostName,
        long ownerPid,
        Instant ownerStartedAt,
        Instant createdAt,
        String qemuBinary,
        String runtimeDir,
        Long qemuPid,
        Instant qemuStartedAt,
        String qemuExecutable,
        String ownerProgram,
        String hostId) {

    static final int FORMAT = 1;
    /** The system property whose value a new record takes as {@link #ownerProgram()}. */
    public static final String PROGRAM_PROPERTY = "qvm.owner.program";
    /** owner.json is tiny; anything bigger is not ours. */
    static final int MAX_BYTES = 64 * 1024;
    private static final ObjectMapper MAPPER = new ObjectMapper();

    public OwnerRecord {
        StateDirectory.checkSandboxId(sandboxId);
        Objects.requireNonNull(hostName, "hostName");
        Objects.requireNonNull(createdAt, "createdAt");
        Objects.requireNonNull(qemuBinary, "qemuBinary");
        if (ownerPid <= 0) {
            throw new IllegalArgumentException("ownerPid must be positive, got " + ownerPid);
        }
        if (qemuPid != null && qemuPid <= 0) {
            throw new IllegalArgumentException("qemuPid must be positive, got " + qemuPid);
        }
    }

    /** A record without host identifier, QEMU executable or owner program (as an older qvm wrote them). */
    public OwnerRecord(String sandboxId, String hostName, long ownerPid, Instant ownerStartedAt, Instant createdAt,
            String qemuBinary, String runtimeDir, Long qemuPid, Instant qemuStartedAt) {
        this(sandboxId, hostName, ownerPid, ownerStartedAt, createdAt, qemuBinary, runtimeDir, qemuPid, qemuStartedAt,
                null, null, null);
    }

    /** A record with a host identifier but no QEMU executable or owner program. */
    public OwnerRecord(String sandboxId, String hostName, long ownerPid, Instant ownerStartedAt, Instant createdAt,
            String qemuBinary, String runtimeDir, Long qemuPid, Instant qemuStartedAt, String hostId) {
        this(sandboxId, hostName, ownerPid, ownerStartedAt, createdAt, qemuBinary, runtimeDir, qemuPid, qemuStartedAt,
                null, null, hostId);
    }

    /** A record with QEMU's executable and the owner program but no host identifier. */
    public OwnerRecord(String sandboxId, String hostName, long ownerPid, Instant ownerStartedAt, Instant createdAt,
            String qemuBinary, String runtimeDir, Long qemuPid, Instant qemuStartedAt, String qemuExecutable,
            String ownerProgram) {
        this(sandboxId, hostName, ownerPid, ownerStartedAt, createdAt, qemuBinary, runtimeDir, qemuPid, qemuStartedAt,
                qemuExecutable, ownerProgram, null);
    }

    /** A record for a sandbox owned by the current process. */
    static OwnerRecord forCurrentProcess(String sandboxId, String qemuBinary, String runtimeDir) {
        ProcessHandle me = ProcessHandle.current();
        HostIdentity host = HostIdentity.current();
        return new OwnerRecord(sandboxId, host.name(), me.pid(), me.info().startInstant().orElse(null),
                Instant.now(), qemuBinary, runtimeDir, null, null, null, System.getProperty(PROGRAM_PROPERTY),
                host.id().orElse(null));
    }

    /** This record with QEMU's pid and start instant (and no executable). */
    public OwnerRecord withQemu(long pid, Instant startedAt) {
        return withQemu(pid, startedAt, null);
    }

    /** This record with QEMU's pid, start instant and executable path (each null if unknown). */
    public OwnerRecord withQemu(long pid, Instant startedAt, String executable) {
        return new OwnerRecord(sandboxId, hostName, ownerPid, ownerStartedAt, createdAt, qemuBinary, runtimeDir, pid,
                startedAt, executable, ownerProgram, hostId);
    }

    byte[] toJson() throws IOException {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("format", FORMAT);
        n.put("sandboxId", sandboxId);
        n.put("hostName", hostName);
        n.put("ownerPid", ownerPid);
        putInstant(n, "ownerStartedAt", ownerStartedAt);
        putInstant(n, "createdAt", createdAt);
        n.put("qemuBinary", qemuBinary);
        if (runtimeDir != null) {
            n.put("runtimeDir", runtimeDir);
        }
        if (qemuPid != null) {
            n.put("qemuPid", qemuPid);
        }
        putInstant(n, "qemuStartedAt", qemuStartedAt);
        if (qemuExecutable != null) {
            n.put("qemuExecutable", qemuExecutable);
        }
        if (ownerProgram != null) {
            n.put("ownerProgram", ownerProgram);
        }
        if (hostId != null) {
            n.put("hostId", hostId);
        }
        return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsBytes(n);
    }

    /**
     * Parses and validates an owner.json.
     *
     * @throws IOException naming the first bad field
     */
    static OwnerRecord parse(byte[] json) throws IOException {
        if (json.length > MAX_BYTES) {
            throw new IOException("owner.json is " + json.length + " bytes, more than " + MAX_BYTES);
        }
        JsonNode n = MAPPER.readTree(json);
        if (n == null || !n.isObject()) {
            throw new IOException("owner.json is not a JSON object");
        }
        if (n.path("format").asInt(-1) != FORMAT) {
            throw new IOException("owner.json has format " + n.path("format") + ", expected " + FORMAT);
        }
        try {
            return new OwnerRecord(
                    text(n, "sandboxId", true),
                    text(n, "hostName", true),
                    number(n, "ownerPid", true),
                    instant(n, "ownerStartedAt", false),
                    instant(n, "createdAt", true),
                    text(n, "qemuBinary", true),
                    text(n, "runtimeDir", false),
                    n.has("qemuPid") ? number(n, "qemuPid", true) : null,
                    instant(n, "qemuStartedAt", false),
                    text(n, "qemuExecutable", false),
                    text(n, "ownerProgram", false),
                    text(n, "hostId", false));
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IOException("owner.json is invalid: " + e.getMessage(), e);
        }
    }

    private static void putInstant(ObjectNode n, String field, Instant value) {
        if (value != null) {
            n.put(field, value.toString());
        }
    }

    private static String text(JsonNode n, String field, boolean required) throws IOException {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            if (required) {
                throw new IOException("owner.json lacks " + field);
            }
            return null;
        }
        if (!v.isTextual()) {
            throw new IOException("owner.json field " + field + " is not a string");
        }
        return v.asText();
    }

    private static Long number(JsonNode n, String field, boolean required) throws IOException {
        JsonNode v = n.get(field);
        if (v == null || !v.canConvertToLong() || !v.isIntegralNumber()) {
            if (required) {
                throw new IOException("owner.json field " + field + " is missing or not an integer");
            }
            return null;
        }
        return v.asLong();
    }

    private static Instant instant(JsonNode n, String field, boolean required) throws IOException {
        String s = text(n, field, required);
        if (s == null) {
            return null;
        }
        try {
            return Instant.parse(s);
        } catch (DateTimeParseException e) {
            throw new IOException("owner.json field " + field + " is not an ISO-8601 instant: " + s, e);
        }
    }
}
