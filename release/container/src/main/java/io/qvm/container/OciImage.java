package io.qvm.container;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipParameters;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Writes a one-layer OCI image (image-spec 1.0) as an image layout directory and as an
 * {@code oci-archive} tar of that directory, byte for byte the same for the same layer, config
 * and epoch:
 * <pre>
 *   DIR/oci/oci-layout                   {"imageLayoutVersion":"1.0.0"}
 *   DIR/oci/index.json                   one manifest, ref.name = the tag
 *   DIR/oci/blobs/sha256/&lt;manifest&gt;      config + one layer
 *   DIR/oci/blobs/sha256/&lt;config&gt;        application/vnd.oci.image.config.v1+json
 *   DIR/oci/blobs/sha256/&lt;layer&gt;         tar+gzip: gzip header without name, mtime 0, OS 3
 *   DIR/qvm-container.oci.tar            the layout as a tar (entries sorted, mtime = epoch)
 * </pre>
 * JSON is compact, with fields in the order written here (Jackson keeps insertion order).
 */
public final class OciImage {
    public static final String ARCHIVE = "qvm-container.oci.tar";
    static final String MANIFEST = "application/vnd.oci.image.manifest.v1+json";
    static final String CONFIG = "application/vnd.oci.image.config.v1+json";
    static final String LAYER = "application/vnd.oci.image.layer.v1.tar+gzip";
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** A content-addressed blob. */
    public record Blob(String mediaType, String digest, long size) {
    }

    /** What {@link #write} made: the manifest (its digest is the image's), the layer's uncompressed digest. */
    public record Written(Blob manifest, Blob config, Blob layer, String diffId, Path layout, Path archive) {
    }

    /** The process a container of this image runs, and its labels. */
    public record RunConfig(String user, List<String> entrypoint, List<String> cmd, List<String> env,
            List<String> exposedPorts, String workingDir, Map<String, String> labels) {
    }

    private OciImage() {
    }

    public static Written write(Layer layer, RunConfig run, String tag, Instant created, Path dir) throws IOException {
        Path layout = dir.resolve("oci");
        Path blobs = layout.resolve("blobs").resolve("sha256");
        Files.createDirectories(blobs);
        Path tmp = Files.createTempFile(blobs, ".layer-", ".tmp");
        MessageDigest gz = sha256();
        MessageDigest plain = sha256();
        try (OutputStream file = new BufferedOutputStream(Files.newOutputStream(tmp), 1 << 16);
                DigestOutputStream gzOut = new DigestOutputStream(file, gz);
                GzipCompressorOutputStream gzip = new GzipCompressorOutputStream(gzOut, gzipParameters());
                DigestOutputStream tarOut = new DigestOutputStream(gzip, plain)) {
            layer.writeTar(tarOut, created.getEpochSecond());
        }
        String layerDigest = "sha256:" + HexFormat.of().formatHex(gz.digest());
        String diffId = "sha256:" + HexFormat.of().formatHex(plain.digest());
        Path layerFile = blobs.resolve(layerDigest.substring(7));
        long layerSize = Files.size(tmp);
        readable(tmp);
        Files.move(tmp, layerFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        Blob layerBlob = new Blob(LAYER, layerDigest, layerSize);
        Blob config = blob(blobs, CONFIG, configJson(run, diffId, created));
        Blob manifest = blob(blobs, MANIFEST, manifestJson(config, layerBlob));
        Files.write(layout.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}".getBytes(StandardCharsets.UTF_8));
        Files.write(layout.resolve("index.json"), indexJson(manifest, tag));
        Path archive = dir.resolve(ARCHIVE);
        writeArchive(layout, List.of(manifest, config, layerBlob), archive, created.getEpochSecond());
        return new Written(manifest, config, layerBlob, diffId, layout, archive);
    }

    static GzipParameters gzipParameters() {
        GzipParameters p = new GzipParameters();
        p.setCompressionLevel(6);
        p.setModificationTime(0);
        p.setOperatingSystem(3);
        return p;
    }

    /** The image config: the process, its environment and the one layer's diff id. */
    static byte[] configJson(RunConfig run, String diffId, Instant created) {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("created", created.toString());
        root.put("architecture", "amd64");
        root.put("os", "linux");
        ObjectNode c = root.putObject("config");
        c.put("User", run.user());
        ObjectNode ports = c.putObject("ExposedPorts");
        run.exposedPorts().forEach(p -> ports.putObject(p));
        strings(c.putArray("Env"), run.env());
        strings(c.putArray("Entrypoint"), run.entrypoint());
        strings(c.putArray("Cmd"), run.cmd());
        c.put("WorkingDir", run.workingDir());
        ObjectNode labels = c.putObject("Labels");
        new java.util.TreeMap<>(run.labels()).forEach(labels::put);
        c.put("StopSignal", "SIGTERM");
        ObjectNode rootfs = root.putObject("rootfs");
        rootfs.put("type", "layers");
        rootfs.putArray("diff_ids").add(diffId);
        ObjectNode h = root.putArray("history").addObject();
        h.put("created", created.toString());
        h.put("created_by", "io.qvm.container.ContainerImageMain");
        return bytes(root);
    }

    static byte[] manifestJson(Blob config, Blob layer) {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("schemaVersion", 2);
        root.put("mediaType", MANIFEST);
        descriptor(root.putObject("config"), config);
        descriptor(root.putArray("layers").addObject(), layer);
        return bytes(root);
    }

    static byte[] indexJson(Blob manifest, String tag) {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("schemaVersion", 2);
        root.put("mediaType", "application/vnd.oci.image.index.v1+json");
        ObjectNode m = root.putArray("manifests").addObject();
        descriptor(m, manifest);
        m.putObject("annotations").put("org.opencontainers.image.ref.name", tag);
        return bytes(root);
    }

    private static void descriptor(ObjectNode o, Blob b) {
        o.put("mediaType", b.mediaType());
        o.put("digest", b.digest());
        o.put("size", b.size());
    }

    private static void strings(ArrayNode a, List<String> values) {
        values.forEach(a::add);
    }

    private static byte[] bytes(ObjectNode root) {
        try {
            return MAPPER.writeValueAsBytes(root);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Blob blob(Path blobs, String mediaType, byte[] content) throws IOException {
        String hex = HexFormat.of().formatHex(sha256().digest(content));
        Files.write(blobs.resolve(hex), content);
        return new Blob(mediaType, "sha256:" + hex, content.length);
    }

    /** The layout as a tar, only the files this image wrote (a reused directory may hold others). */
    private static void writeArchive(Path layout, List<Blob> blobs, Path archive, long epoch) throws IOException {
        Layer l = new Layer();
        l.file("oci-layout", 0644, layout.resolve("oci-layout"));
        l.file("index.json", 0644, layout.resolve("index.json"));
        for (Blob b : blobs) {
            String hex = b.digest().substring(7);
            l.file("blobs/sha256/" + hex, 0644, layout.resolve("blobs").resolve("sha256").resolve(hex));
        }
        Path tmp = Files.createTempFile(archive.getParent(), ".archive-", ".tmp");
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(tmp), 1 << 16)) {
            l.writeTar(out, epoch);
        }
        readable(tmp);
        Files.move(tmp, archive, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** 0644 instead of a temporary file's 0600, where the file system has POSIX modes. */
    private static void readable(Path f) throws IOException {
        if (f.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Files.setPosixFilePermissions(f, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        }
    }

    /** The SHA-256 of a file, in hex. */
    static String hex(Path file) throws IOException {
        MessageDigest d = sha256();
        try (var in = new java.security.DigestInputStream(Files.newInputStream(file), d)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
        return HexFormat.of().formatHex(d.digest());
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
