package io.qvm.image;

import io.qvm.protocol.image.Arch;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The lock file: every Debian package the guest image takes, per architecture, pinned by name,
 * suite, version, architecture and SHA-256 of the .deb. JSON, in
 * {@code initramfs-build/src/main/resources/io/qvm/image/packages.lock}:
 * <pre>
 * {
 *   "format": 1,
 *   "refresh": "./qvm image lock (or: java -jar initramfs-build/target/qvm-image.jar lock)",
 *   "architectures": {
 *     "x86_64": [
 *       { "name": "runsc", "role": "runsc", "suite": "trixie", "version": "0.0~20240729.0-4+b7",
 *         "architecture": "amd64", "filename": "pool/main/g/golang-gvisor-gvisor/runsc_...deb",
 *         "size": 6133804, "sha256": "8e13..." }, ...
 *     ],
 *     "aarch64": [ ... ]
 *   }
 * }
 * </pre>
 * Entries are sorted by name, so a refresh that changes nothing rewrites the same bytes.
 */
public final class PackageLock {
    /** The resource the build reads by default. */
    public static final String RESOURCE = "/io/qvm/image/packages.lock";
    /** Where the lock lives in the repository (for {@code lock} to rewrite). */
    public static final String SOURCE_PATH =
            "initramfs-build/src/main/resources/io/qvm/image/packages.lock";
    /** What to tell a user whose lock is stale. */
    public static final String REFRESH_COMMAND =
            "./qvm image lock (or: java -jar initramfs-build/target/qvm-image.jar lock)";

    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** What a package is for in the image. */
    public enum Role {
        KERNEL, BUSYBOX, RUNSC, JDK, LIBRARY, FONTS, PERL;

        public String id() {
            return name().toLowerCase(Locale.ROOT);
        }

        static Role parse(String s) {
            return valueOf(s.toUpperCase(Locale.ROOT));
        }
    }

    /** One pinned package. */
    public record Entry(String name, Role role, String suite, String version, String architecture,
            String filename, long size, String sha256) {
        public Entry {
            require(name, "name");
            require(suite, "suite");
            require(version, "version");
            require(architecture, "architecture");
            require(filename, "filename");
            if (role == null) {
                throw new IllegalArgumentException("package " + name + ": no role");
            }
            if (sha256 == null || !SHA256.matcher(sha256).matches()) {
                throw new IllegalArgumentException("package " + name + ": sha256 must be 64 "
                        + "lower-case hex digits, got '" + sha256 + "'");
            }
        }

        /** {@code name version (arch)}, for messages. */
        public String label() {
            return name + " " + version + " (" + architecture + ")";
        }

        private static void require(String v, String what) {
            if (v == null || v.isBlank()) {
                throw new IllegalArgumentException("lock entry without " + what);
            }
        }
    }

    private final Map<Arch, List<Entry>> entries;

    public PackageLock(Map<Arch, List<Entry>> entries) {
        Map<Arch, List<Entry>> m = new EnumMap<>(Arch.class);
        entries.forEach((a, list) -> {
            List<Entry> sorted = new ArrayList<>(list);
            sorted.sort((x, y) -> x.name().compareTo(y.name()));
            m.put(a, Collections.unmodifiableList(sorted));
        });
        this.entries = Collections.unmodifiableMap(m);
    }

    public List<Entry> entries(Arch arch) {
        List<Entry> list = entries.get(arch);
        if (list == null || list.isEmpty()) {
            throw new ImageException("the lock has no packages for " + arch + ": refresh it with "
                    + REFRESH_COMMAND);
        }
        return list;
    }

    public boolean has(Arch arch) {
        return entries.containsKey(arch) && !entries.get(arch).isEmpty();
    }

    public Map<Arch, List<Entry>> all() {
        return entries;
    }

    /** The single entry with this role (kernel, busybox, runsc, jdk, fonts). */
    public Entry one(Arch arch, Role role) {
        List<Entry> l = entries(arch).stream().filter(e -> e.role() == role).toList();
        if (l.size() != 1) {
            throw new ImageException("the lock must have exactly one " + role.id() + " package for "
                    + arch + ", it has " + l.size() + ": refresh it with " + REFRESH_COMMAND);
        }
        return l.get(0);
    }

    public List<Entry> withRole(Arch arch, Role role) {
        return entries(arch).stream().filter(e -> e.role() == role).toList();
    }

    /** The lock bundled in this jar. */
    public static PackageLock bundled() {
        try (InputStream in = PackageLock.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new ImageException("no " + RESOURCE + " on the class path: create it with "
                        + REFRESH_COMMAND);
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), RESOURCE);
        } catch (IOException e) {
            throw new ImageException("cannot read " + RESOURCE + ": " + e, e);
        }
    }

    public static PackageLock read(Path file) {
        try {
            return parse(Files.readString(file), file.toString());
        } catch (IOException e) {
            throw new ImageException("cannot read the lock " + file + ": " + e, e);
        }
    }

    public static PackageLock parse(String json, String where) {
        try {
            JsonNode root = MAPPER.readTree(json);
            if (root.path("format").asInt() != 1) {
                throw new ImageException(where + ": unsupported lock format "
                        + root.path("format") + " (expected 1)");
            }
            Map<Arch, List<Entry>> m = new EnumMap<>(Arch.class);
            var fields = root.path("architectures").fields();
            while (fields.hasNext()) {
                var f = fields.next();
                Arch arch = Arch.parse(f.getKey());
                List<Entry> list = new ArrayList<>();
                for (JsonNode e : f.getValue()) {
                    list.add(new Entry(e.path("name").asText(null), Role.parse(e.path("role").asText()),
                            e.path("suite").asText(null), e.path("version").asText(null),
                            e.path("architecture").asText(null), e.path("filename").asText(null),
                            e.path("size").asLong(), e.path("sha256").asText(null)));
                }
                m.put(arch, list);
            }
            return new PackageLock(m);
        } catch (IOException | IllegalArgumentException e) {
            throw new ImageException(where + " is not a valid lock: " + e.getMessage()
                    + ". Refresh it with " + REFRESH_COMMAND, e);
        }
    }

    /** The lock as JSON text (stable: same content, same bytes). */
    public String toJson() {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("format", 1);
        root.put("refresh", REFRESH_COMMAND);
        ObjectNode archs = root.putObject("architectures");
        for (Map.Entry<Arch, List<Entry>> a : entries.entrySet()) {
            ArrayNode list = archs.putArray(a.getKey().id());
            for (Entry e : a.getValue()) {
                ObjectNode o = list.addObject();
                o.put("name", e.name());
                o.put("role", e.role().id());
                o.put("suite", e.suite());
                o.put("version", e.version());
                o.put("architecture", e.architecture());
                o.put("filename", e.filename());
                o.put("size", e.size());
                o.put("sha256", e.sha256());
            }
        }
        try {
            DefaultPrettyPrinter pp = new DefaultPrettyPrinter()
                    .withObjectIndenter(new DefaultIndenter("  ", "\n"))
                    .withArrayIndenter(new DefaultIndenter("  ", "\n"));
            return MAPPER.writer(pp).writeValueAsString(root) + "\n";
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
