package io.qvm.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker's dependency lock: a worker jar whose BOM (as cyclonedx-maven-plugin writes it) names
 * exactly the locked closure passes; a tampered dependency (another SHA-256), an added or a removed
 * one is refused, each named with both hashes and the command that takes a change on purpose; a
 * jar without its BOM (an offline build) is refused saying so; the image build checks before it
 * touches a package.
 */
@Tag("unit")
@Tag("security")
class WorkerLockTest {

    static final WorkerLock LOCK = WorkerLock.bundled();
    static final String PDFBOX = "org.apache.pdfbox:pdfbox:3.0.8:jar";

    @TempDir
    Path tmp;

    @Test
    void theBundledLockPinsTheWorkersClosureAndRendersToItsOwnBytes() throws IOException {
        assertTrue(LOCK.artifacts().containsKey(PDFBOX), LOCK.artifacts().toString());
        assertTrue(LOCK.artifacts().keySet().stream().noneMatch(c -> c.startsWith("io.qvm:")), "own modules not pinned");
        String text = new String(WorkerLock.class.getResourceAsStream(WorkerLock.RESOURCE).readAllBytes(),
                StandardCharsets.UTF_8);
        assertEquals(text, LOCK.render(), "sorted, one artifact a line: a rewrite that changes nothing is no diff");
    }

    @Test
    void aWorkerJarBuiltFromTheLockedClosurePasses() throws IOException {
        Path jar = jar(bom(LOCK.artifacts()));
        assertEquals(LOCK.artifacts(), WorkerLock.ofJar(jar).artifacts());
        LOCK.check(jar);
    }

    @Test
    void aTamperedDependencyIsRefusedAndNamedWithBothHashes() throws IOException {
        Map<String, String> closure = new LinkedHashMap<>(LOCK.artifacts());
        String bad = "b".repeat(64);
        closure.put(PDFBOX, bad);
        Path jar = jar(bom(closure));

        ImageException e = assertThrows(ImageException.class, () -> LOCK.check(jar));
        String m = e.getMessage();
        assertTrue(m.contains("changed " + PDFBOX + ": the lock pins sha256 " + LOCK.artifacts().get(PDFBOX)
                + ", the worker jar was built from " + bad), m);
        assertTrue(m.contains("(1 difference)"), m);
        assertTrue(m.contains(WorkerLock.UPDATE_COMMAND), m);
    }

    @Test
    void anAddedAndARemovedDependencyAreEachNamed() throws IOException {
        Map<String, String> closure = new LinkedHashMap<>(LOCK.artifacts());
        closure.remove(PDFBOX);
        closure.put("org.example:evil:1.0:jar:natives", "c".repeat(64));
        ImageException e = assertThrows(ImageException.class, () -> LOCK.check(jar(bom(closure))));
        String m = e.getMessage();
        assertTrue(m.contains("added org.example:evil:1.0:jar:natives (sha256 " + "c".repeat(64) + ")"), m);
        assertTrue(m.contains("removed " + PDFBOX + " (locked sha256 " + LOCK.artifacts().get(PDFBOX) + ")"), m);
        assertTrue(m.contains("(2 differences)"), m);
    }

    @Test
    void aWorkerJarWithoutItsBomIsRefusedSayingItWasBuiltWithoutIt() throws IOException {
        Path jar = tmp.resolve("offline.jar");
        try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(jar))) {
            zip.putNextEntry(new ZipEntry("io/qvm/worker/Main.class"));
            zip.write(new byte[] {1, 2, 3});
        }
        ImageException e = assertThrows(ImageException.class, () -> LOCK.check(jar));
        assertTrue(e.getMessage().contains(WorkerLock.BOM_ENTRY) && e.getMessage().contains("offline (mvn -o)"),
                e.getMessage());
    }

    @Test
    void aComponentWithoutSha256IsRefused() throws IOException {
        ObjectNode bom = bom(LOCK.artifacts());
        ((ObjectNode) bom.path("components").get(1)).putArray("hashes");
        ImageException e = assertThrows(ImageException.class, () -> WorkerLock.ofJar(jar(bom)));
        assertTrue(e.getMessage().contains("no SHA-256 for"), e.getMessage());
    }

    @Test
    void packageUrlsBecomeCoordinates() {
        assertEquals("g.h:a:1.0:jar", WorkerLock.coordinates("pkg:maven/g.h/a@1.0"));
        assertEquals("g:a:1.0:jar:linux-x86_64", WorkerLock.coordinates("pkg:maven/g/a@1.0?classifier=linux-x86_64&type=jar"));
        assertEquals("g:a:1.0+b:test-jar", WorkerLock.coordinates("pkg:maven/g/a@1.0%2Bb?type=test-jar"));
        assertThrows(ImageException.class, () -> WorkerLock.coordinates("pkg:maven/no-version"));
    }

    /** The update path: lock-worker writes the jar's closure; the check then passes. */
    @Test
    void lockWorkerTakesAChangeOnPurpose() throws IOException {
        Map<String, String> closure = new LinkedHashMap<>(LOCK.artifacts());
        closure.put(PDFBOX, "d".repeat(64));
        Path jar = jar(bom(closure));
        Path file = tmp.resolve("worker-dependencies.lock");
        Files.writeString(file, LOCK.render());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = ImageBuildMain.run(new String[] {"lock-worker", "--worker-jar", jar.toString(), "--lock",
            file.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, rc, err.toString(StandardCharsets.UTF_8));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("changed " + PDFBOX), err.toString(StandardCharsets.UTF_8));
        WorkerLock.read(file).check(jar);
        assertFalse(WorkerLock.read(file).differences(LOCK).isEmpty());
    }

    /** The image build refuses a tampered worker before it extracts or fetches any package. */
    @Test
    void theImageBuildRefusesATamperedWorkerBeforeAnyPackage() throws IOException {
        Map<String, String> closure = new LinkedHashMap<>(LOCK.artifacts());
        closure.put(PDFBOX, "e".repeat(64));
        Path jar = jar(bom(closure));
        Path cache = tmp.resolve("cache");
        ImageBuilder b = ImageBuilder.builder().workerJar(jar).outDir(tmp.resolve("out")).cache(cache).build();
        ImageException e = assertThrows(ImageException.class, b::run);
        assertTrue(e.getMessage().contains("changed " + PDFBOX), e.getMessage());
        assertFalse(Files.exists(cache), "no package was fetched or extracted");
        assertFalse(Files.exists(tmp.resolve("out")), "nothing was written");
    }

    // ---- fixtures: the BOM in the shape cyclonedx-maven-plugin writes it ------------------------

    static ObjectNode bom(Map<String, String> closure) {
        ObjectMapper m = new ObjectMapper();
        ObjectNode bom = m.createObjectNode();
        bom.put("bomFormat", "CycloneDX");
        bom.put("specVersion", "1.6");
        ArrayNode components = bom.putArray("components");
        components.add(component(m, "io.qvm", "qvm-protocol", "0.1.0-SNAPSHOT", "jar", null, "1".repeat(64)));
        closure.forEach((c, h) -> {
            String[] f = c.split(":");
            components.add(component(m, f[0], f[1], f[2], f[3], f.length > 4 ? f[4] : null, h));
        });
        return bom;
    }

    private static ObjectNode component(ObjectMapper m, String group, String name, String version, String type,
            String classifier, String sha256) {
        ObjectNode c = m.createObjectNode();
        c.put("type", "library");
        c.put("group", group);
        c.put("name", name);
        c.put("version", version);
        c.put("purl", "pkg:maven/" + group + "/" + name + "@" + version.replace("+", "%2B")
                + (classifier != null ? "?classifier=" + classifier + "&type=" + type : "?type=" + type));
        ArrayNode hashes = c.putArray("hashes");
        hashes.addObject().put("alg", "SHA-1").put("content", "0".repeat(40));
        hashes.addObject().put("alg", "SHA-256").put("content", sha256);
        return c;
    }

    Path jar(ObjectNode bom) throws IOException {
        Path jar = Files.createTempFile(tmp, "worker-", ".jar");
        try (ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(jar))) {
            zip.putNextEntry(new ZipEntry("io/qvm/worker/Main.class"));
            zip.write(new byte[] {(byte) 0xca, (byte) 0xfe});
            zip.putNextEntry(new ZipEntry(WorkerLock.BOM_ENTRY));
            zip.write(new ObjectMapper().writeValueAsBytes(bom));
        }
        return jar;
    }
}
