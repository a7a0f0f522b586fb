package io.qvm.image;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * The worker's Maven dependency closure, pinned by SHA-256: every third-party artifact the shaded
 * worker jar is made of, as {@code groupId:artifactId:version:type[:classifier]} and the SHA-256
 * of the file Maven resolved (and the shade plugin packed). Text, one artifact a line, sorted, in
 * {@code initramfs-build/src/main/resources/io/qvm/image/worker-dependencies.lock}:
 * <pre>
 * # comment
 * com.fasterxml.jackson.core:jackson-core:2.21.0:jar  0123…(64 hex)
 * org.apache.pdfbox:pdfbox:3.0.8:jar  4567…
 * </pre>
 * The image build ({@link ImageBuilder}) takes the worker jar's closure from the CycloneDX BOM the
 * worker build packs into it ({@value #BOM_ENTRY}: cyclonedx-maven-plugin hashes the very files
 * Maven resolved for the shade plugin) and refuses a jar whose closure is not this lock — an added,
 * removed or changed artifact, each named — so a dependency that was tampered with in the local
 * repository or on its way from a registry builds no image, however reproducibly. The checkout's
 * own modules ({@value #OWN_GROUP}) are built from its sources and not pinned here. A change made
 * on purpose is written with {@value #UPDATE_COMMAND} and reviewed in the diff.
 */
public final class WorkerLock {

    /** The resource the build reads by default. */
    public static final String RESOURCE = "/io/qvm/image/worker-dependencies.lock";
    /** Where the lock lives in the repository (for {@code lock-worker} to rewrite). */
    public static final String SOURCE_PATH =
            "initramfs-build/src/main/resources/io/qvm/image/worker-dependencies.lock";
    /** How a change to the worker's dependencies is taken into the lock on purpose. */
    public static final String UPDATE_COMMAND = "java -jar initramfs-build/target/qvm-image.jar lock-worker "
            + "[--worker-jar JAR] (after mvn -pl renderer-worker -am package), then review the diff of " + SOURCE_PATH;
    /** Where the worker jar carries its BOM (renderer-worker/pom.xml, execution worker-bom). */
    public static final String BOM_ENTRY = "META-INF/qvm/worker.cdx.json";
    /** The checkout's own modules: built from its sources, not pinned. */
    public static final String OWN_GROUP = "io.qvm";

    static final int MAX_BOM_BYTES = 16 << 20;
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern COORDINATES = Pattern.compile("[A-Za-z0-9_.\\-]+(:[A-Za-z0-9_.\\-+]+){3,4}");
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** coordinates → SHA-256, sorted. */
    private final Map<String, String> artifacts;

    private WorkerLock(Map<String, String> artifacts) {
        this.artifacts = Collections.unmodifiableMap(new TreeMap<>(artifacts));
    }

    /** A lock of these artifacts (coordinates → SHA-256); each checked. */
    public static WorkerLock of(Map<String, String> artifacts) {
        artifacts.forEach((c, h) -> {
            if (!COORDINATES.matcher(c).matches()) {
                throw new IllegalArgumentException("not groupId:artifactId:version:type[:classifier]: '" + c + "'");
            }
            if (h == null || !SHA256.matcher(h).matches()) {
                throw new IllegalArgumentException(c + ": not a SHA-256: '" + h + "'");
            }
        });
        return new WorkerLock(artifacts);
    }

    /** coordinates → SHA-256, sorted by coordinates. */
    public Map<String, String> artifacts() {
        return artifacts;
    }

    /** The lock bundled in this jar. */
    public static WorkerLock bundled() {
        try (InputStream in = WorkerLock.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new ImageException("no worker dependency lock on the class path (" + RESOURCE + "): write it with "
                        + UPDATE_COMMAND);
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), RESOURCE);
        } catch (IOException e) {
            throw new ImageException("cannot read " + RESOURCE + ": " + e, e);
        }
    }

    public static WorkerLock read(Path file) {
        try {
            return parse(Files.readString(file), file.toString());
        } catch (IOException e) {
            throw new ImageException("cannot read the worker dependency lock " + file + ": " + e, e);
        }
    }

    /** Parses the text form; {@code where} names it in errors. */
    public static WorkerLock parse(String text, String where) {
        Map<String, String> m = new TreeMap<>();
        int n = 0;
        for (String raw : text.split("\n", -1)) {
            n++;
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length != 2 || !COORDINATES.matcher(f[0]).matches() || !SHA256.matcher(f[1]).matches()) {
                throw new ImageException(where + ":" + n + ": expected 'groupId:artifactId:version:type[:classifier]  "
                        + "sha256', got '" + line + "'; rewrite the lock with " + UPDATE_COMMAND);
            }
            if (m.put(f[0], f[1]) != null) {
                throw new ImageException(where + ":" + n + ": " + f[0] + " is listed twice");
            }
        }
        return new WorkerLock(m);
    }

    /** The text form: a header, then one artifact a line, sorted (the same lock, the same bytes). */
    public String render() {
        StringBuilder sb = new StringBuilder()
                .append("# The renderer worker's Maven dependency closure, pinned by SHA-256 (what the shaded worker jar\n")
                .append("# is made of; the checkout's own modules, ").append(OWN_GROUP).append(":*, are not pinned).\n")
                .append("# The image build refuses a worker jar whose BOM differs. Change it on purpose only:\n")
                .append("#   ").append(UPDATE_COMMAND).append('\n');
        artifacts.forEach((c, h) -> sb.append(c).append("  ").append(h).append('\n'));
        return sb.toString();
    }

    /**
     * The closure a worker jar says it is made of: its BOM's components, the checkout's own modules
     * left out.
     *
     * @throws ImageException the jar is unreadable, has no BOM (built offline, where the plugin
     *     does not run), or a component without a SHA-256 or a Maven package URL
     */
    public static WorkerLock ofJar(Path workerJar) {
        JsonNode bom;
        try (ZipFile zip = new ZipFile(workerJar.toFile())) {
            ZipEntry e = zip.getEntry(BOM_ENTRY);
            if (e == null) {
                throw new ImageException(workerJar + " has no " + BOM_ENTRY + " (the CycloneDX BOM of the worker's "
                        + "Maven dependencies), so its dependencies cannot be checked against their lock: the worker "
                        + "was built without it, e.g. offline (mvn -o), where cyclonedx-maven-plugin's makeBom does not "
                        + "run. Build it online: mvn -pl renderer-worker -am package");
            }
            try (InputStream in = zip.getInputStream(e)) {
                byte[] json = in.readNBytes(MAX_BOM_BYTES + 1);
                if (json.length > MAX_BOM_BYTES) {
                    throw new ImageException(BOM_ENTRY + " in " + workerJar + " is larger than " + MAX_BOM_BYTES
                            + " bytes");
                }
                bom = MAPPER.readTree(json);
            }
        } catch (IOException e) {
            throw new ImageException("cannot read the BOM of the worker jar " + workerJar + ": " + e, e);
        }
        Map<String, String> m = new TreeMap<>();
        for (JsonNode c : bom.path("components")) {
            String purl = c.path("purl").asText("");
            if (!purl.startsWith("pkg:maven/")) {
                throw new ImageException("the worker's BOM lists a component that is not a Maven artifact: '"
                        + c.path("name").asText() + "' (purl '" + purl + "')");
            }
            if (OWN_GROUP.equals(c.path("group").asText())) {
                continue;
            }
            String coordinates = coordinates(purl);
            String sha = null;
            for (JsonNode h : c.path("hashes")) {
                if ("SHA-256".equals(h.path("alg").asText())) {
                    sha = h.path("content").asText();
                }
            }
            if (sha == null || !SHA256.matcher(sha).matches()) {
                throw new ImageException("the worker's BOM has no SHA-256 for " + coordinates + " (" + workerJar + ")");
            }
            if (m.put(coordinates, sha) != null && !m.get(coordinates).equals(sha)) {
                throw new ImageException("the worker's BOM lists " + coordinates + " twice with different hashes");
            }
        }
        return of(m);
    }

    /**
     * {@code pkg:maven/group/name@version?type=jar&classifier=c} → {@code group:name:version:jar:c}
     * (type {@code jar} when the URL names none).
     */
    static String coordinates(String purl) {
        String rest = purl.substring("pkg:maven/".length());
        int hash = rest.indexOf('#');
        if (hash >= 0) {
            rest = rest.substring(0, hash);
        }
        String query = "";
        int q = rest.indexOf('?');
        if (q >= 0) {
            query = rest.substring(q + 1);
            rest = rest.substring(0, q);
        }
        int at = rest.lastIndexOf('@');
        int slash = rest.indexOf('/');
        if (at < 0 || slash < 0 || slash > at) {
            throw new ImageException("not a Maven package URL: '" + purl + "'");
        }
        String group = decode(rest.substring(0, slash));
        String name = decode(rest.substring(slash + 1, at));
        String version = decode(rest.substring(at + 1));
        String type = "jar";
        String classifier = null;
        for (String kv : query.split("&")) {
            int eq = kv.indexOf('=');
            if (eq < 0) {
                continue;
            }
            String k = kv.substring(0, eq);
            String v = decode(kv.substring(eq + 1));
            if (k.equals("type")) {
                type = v;
            } else if (k.equals("classifier")) {
                classifier = v;
            }
        }
        return group + ":" + name + ":" + version + ":" + type + (classifier != null ? ":" + classifier : "");
    }

    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    /**
     * What {@code actual} has that this lock does not: one line per artifact added, removed, or
     * with another SHA-256; empty when they are the same.
     */
    public List<String> differences(WorkerLock actual) {
        List<String> out = new ArrayList<>();
        actual.artifacts.forEach((c, h) -> {
            String locked = artifacts.get(c);
            if (locked == null) {
                out.add("added " + c + " (sha256 " + h + "): not in the lock");
            } else if (!locked.equals(h)) {
                out.add("changed " + c + ": the lock pins sha256 " + locked + ", the worker jar was built from " + h);
            }
        });
        artifacts.forEach((c, h) -> {
            if (!actual.artifacts.containsKey(c)) {
                out.add("removed " + c + " (locked sha256 " + h + "): the worker jar was built without it");
            }
        });
        return out;
    }

    /**
     * Refuses {@code workerJar} unless its closure is exactly this lock.
     *
     * @throws ImageException naming every difference and how to take a change on purpose
     */
    public void check(Path workerJar) {
        List<String> d = differences(ofJar(workerJar));
        if (!d.isEmpty()) {
            throw new ImageException("the worker jar " + workerJar + " was built from Maven dependencies that are not "
                    + "the ones " + SOURCE_PATH + " pins (" + d.size() + " difference" + (d.size() == 1 ? "" : "s")
                    + "):\n  " + String.join("\n  ", d) + "\nA dependency that changed without a change to the lock "
                    + "may have been tampered with (in the local Maven repository or on its way from the registry): "
                    + "delete it there and build the worker again. If the change is on purpose (a version bump), take "
                    + "it into the lock with " + UPDATE_COMMAND);
        }
    }
}
