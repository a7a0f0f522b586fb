package io.qvm.release;

import io.qvm.image.OciConfig;
import io.qvm.protocol.image.ImageDirectory;
import io.qvm.protocol.image.ImageManifest;
import io.qvm.protocol.util.Sha256;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.cyclonedx.exception.ParseException;
import org.cyclonedx.model.Bom;
import org.cyclonedx.parsers.JsonParser;

/**
 * The Maven half of an image's SBOM: the CycloneDX BOM that {@code cyclonedx-maven-plugin} wrote
 * for the worker's runtime closure at build time and packed into the worker jar
 * ({@value #ENTRY}), read here out of the worker jar <em>inside the image</em> — so the list
 * describes the bytes that boot, not whatever {@code renderer-worker/target} holds now. The jar
 * must be the one the manifest names (same SHA-256).
 */
public final class WorkerBom {

    /** Where the worker jar carries its BOM (renderer-worker/pom.xml, execution worker-bom). */
    public static final String ENTRY = "META-INF/qvm/worker.cdx.json";
    /** The worker jar's path inside the initramfs: the OCI bundle's root file system. */
    public static final String IMAGE_PATH = "bundle/rootfs" + OciConfig.WORKER_JAR;

    /** The most a BOM entry may hold. */
    static final int MAX_BOM_BYTES = 16 << 20;

    /**
     * The worker's BOM and the jar's hash.
     *
     * @param bom the parsed BOM (metadata component: the worker; components: its closure)
     * @param jarSha256 the SHA-256 of the worker jar it came from
     * @param jarSize the jar's size in bytes
     */
    public record Read(Bom bom, String jarSha256, long jarSize) {
    }

    private WorkerBom() {
    }

    /** Reads the BOM of the worker jar inside {@code imageDir}'s initramfs, checked against its manifest. */
    public static Read fromImage(Path imageDir, ImageManifest manifest) {
        Path initramfs = imageDir.resolve(ImageDirectory.INITRAMFS);
        byte[] jar;
        try {
            jar = InitramfsReader.entry(initramfs, IMAGE_PATH).orElseThrow(() -> new ReleaseException(
                    initramfs + " has no " + IMAGE_PATH + ": not a qvm image"));
        } catch (IOException e) {
            throw new ReleaseException("cannot read " + initramfs + ": " + e.getMessage(), e);
        }
        String sha = Sha256.of(jar);
        if (manifest.workerJar() == null || !sha.equals(manifest.workerJar().sha256())) {
            throw new ReleaseException("the worker jar in " + initramfs + " has sha256 " + sha + " but "
                    + ImageDirectory.MANIFEST + " says " + (manifest.workerJar() == null ? "nothing"
                    : manifest.workerJar().sha256()));
        }
        return new Read(fromJar(jar, IMAGE_PATH), sha, jar.length);
    }

    /** The BOM packed in a worker jar's bytes ({@code where} names the jar in messages). */
    public static Bom fromJar(byte[] jar, String where) {
        try (ZipInputStream zip = new ZipInputStream(new ByteArrayInputStream(jar))) {
            for (ZipEntry e; (e = zip.getNextEntry()) != null; ) {
                if (e.getName().equals(ENTRY)) {
                    byte[] json = zip.readNBytes(MAX_BOM_BYTES + 1);
                    if (json.length > MAX_BOM_BYTES) {
                        throw new ReleaseException(ENTRY + " in " + where + " is larger than " + MAX_BOM_BYTES
                                + " bytes");
                    }
                    return new JsonParser().parse(json);
                }
            }
        } catch (IOException e) {
            throw new ReleaseException(where + " is not a readable jar: " + e.getMessage(), e);
        } catch (ParseException e) {
            throw new ReleaseException(ENTRY + " in " + where + " is not a CycloneDX BOM: " + e.getMessage(), e);
        }
        throw new ReleaseException(where + " has no " + ENTRY + " (the CycloneDX BOM of the worker's Maven "
                + "dependencies): the worker jar was built without it, e.g. offline (mvn -o), where "
                + "cyclonedx-maven-plugin's makeBom does not run. Build the worker online (mvn -pl renderer-worker -am "
                + "package, without -o) and rebuild the image");
    }
}
