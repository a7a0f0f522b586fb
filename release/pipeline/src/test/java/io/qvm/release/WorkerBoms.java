package io.qvm.release;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.cyclonedx.Version;
import org.cyclonedx.generators.BomGeneratorFactory;
import org.cyclonedx.model.Bom;
import org.cyclonedx.model.Component;
import org.cyclonedx.model.Dependency;
import org.cyclonedx.model.Hash;
import org.cyclonedx.model.Metadata;

/**
 * Worker jars for tests: a jar carrying a CycloneDX BOM at {@link WorkerBom#ENTRY}, written with
 * the same library (and in the same shape) as cyclonedx-maven-plugin writes the real one.
 */
public final class WorkerBoms {

    /** The closure the sample BOM lists: group, name, version, SHA-256. */
    public static final List<String[]> CLOSURE = List.of(
            new String[] {"io.qvm", "qvm-protocol", "0.1.0-SNAPSHOT", "1".repeat(64)},
            new String[] {"org.apache.pdfbox", "pdfbox", "3.0.8", "2".repeat(64)},
            new String[] {"org.apache.xmlgraphics", "batik-transcoder", "1.19", "3".repeat(64)});

    private WorkerBoms() {
    }

    /** The sample worker BOM; {@code withoutSha256} drops the SHA-256 of the last component. */
    public static Bom bom(boolean withoutSha256) {
        Bom bom = new Bom();
        Component worker = maven("io.qvm", "qvm-renderer-worker", "0.1.0-SNAPSHOT", null);
        Metadata m = new Metadata();
        m.setTimestamp(null);
        m.setComponent(worker);
        bom.setMetadata(m);
        Dependency root = new Dependency(worker.getBomRef());
        for (int i = 0; i < CLOSURE.size(); i++) {
            String[] c = CLOSURE.get(i);
            Component comp = maven(c[0], c[1], c[2], withoutSha256 && i == CLOSURE.size() - 1 ? null : c[3]);
            bom.addComponent(comp);
            root.addDependency(new Dependency(comp.getBomRef()));
        }
        bom.addDependency(root);
        return bom;
    }

    /** A jar holding {@code bom} at {@link WorkerBom#ENTRY} and one class-like file. */
    public static byte[] jar(Bom bom) {
        try {
            return zip(BomGeneratorFactory.createJson(Version.VERSION_16, bom).toJsonString());
        } catch (org.cyclonedx.exception.GeneratorException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A worker jar as an offline build makes it: the classes, no BOM. */
    public static byte[] jarWithoutBom() {
        return zip(null);
    }

    /** One class-like file, then {@code bomJson} at {@link WorkerBom#ENTRY} unless null. */
    private static byte[] zip(String bomJson) {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (ZipOutputStream zip = new ZipOutputStream(out)) {
                ZipEntry e = new ZipEntry("io/qvm/worker/Main.class");
                e.setTime(0);
                zip.putNextEntry(e);
                zip.write(new byte[] {(byte) 0xca, (byte) 0xfe, (byte) 0xba, (byte) 0xbe});
                if (bomJson != null) {
                    ZipEntry b = new ZipEntry(WorkerBom.ENTRY);
                    b.setTime(0);
                    zip.putNextEntry(b);
                    zip.write(bomJson.getBytes(StandardCharsets.UTF_8));
                }
            }
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Component maven(String group, String name, String version, String sha256) {
        Component c = new Component();
        c.setType(Component.Type.LIBRARY);
        c.setGroup(group);
        c.setName(name);
        c.setVersion(version);
        c.setPurl("pkg:maven/" + group + "/" + name + "@" + version + "?type=jar");
        c.setBomRef(c.getPurl());
        if (sha256 != null) {
            c.addHash(new Hash(Hash.Algorithm.SHA_256, sha256));
        }
        return c;
    }
}
