package io.qvm.release;

import com.github.packageurl.MalformedPackageURLException;
import com.github.packageurl.PackageURL;
import io.qvm.image.PackageLock;
import io.qvm.protocol.image.Arch;
import io.qvm.protocol.image.ImageManifest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.cyclonedx.Version;
import org.cyclonedx.exception.GeneratorException;
import org.cyclonedx.exception.ParseException;
import org.cyclonedx.generators.BomGeneratorFactory;
import org.cyclonedx.model.Bom;
import org.cyclonedx.model.Component;
import org.cyclonedx.model.Dependency;
import org.cyclonedx.model.Hash;
import org.cyclonedx.model.License;
import org.cyclonedx.model.LicenseChoice;
import org.cyclonedx.model.Metadata;
import org.cyclonedx.model.Property;
import org.cyclonedx.parsers.JsonParser;

/**
 * The CycloneDX SBOM of one guest image ({@code sbom.cdx.json}), built and written with
 * CycloneDX's own library (cyclonedx-core-java), spec {@value #SPEC}:
 * <ul>
 * <li>metadata: the image, {@code pkg:maven/io.qvm/qvm-image@<v>?classifier=<arch>&type=zip},
 *     with its kernel and initramfs hashes as properties;</li>
 * <li>one component per Debian package of that architecture's lock entry: name, version,
 *     {@code pkg:deb/debian/<name>@<version>?arch=<arch>}, the .deb's SHA-256, the licences its
 *     DEP-5 copyright file names ({@link DebianCopyright}), its role and suite as properties;</li>
 * <li>the worker jar and every Maven artifact of its runtime closure, as cyclonedx-maven-plugin
 *     recorded them (versions, purls, hashes, licences; {@link WorkerBom}), with their dependency
 *     graph.</li>
 * </ul>
 * The same image gives the same bytes: the timestamp is the image's {@code source_date_epoch},
 * the serial number a name-based UUID of the image's hashes.
 */
public final class ImageSbom {

    public static final String FILE = io.qvm.admin.ImageArtifacts.SBOM_FILE;
    static final Version VERSION = Version.VERSION_16;
    static final String SPEC = "1.6";
    /** Property names of our own (CycloneDX asks for a namespace). */
    static final String ROLE = "qvm:role";
    static final String SUITE = "qvm:suite";
    static final String ECOSYSTEM = "qvm:ecosystem";

    /**
     * What goes in.
     *
     * @param arch the image's architecture
     * @param version the release version (the image artifact's)
     * @param manifest the image's manifest (its inputs must be {@code packages})
     * @param packages that architecture's lock entries
     * @param licenses package name → the licences its copyright file names (absent: none)
     * @param worker the worker jar's BOM, from inside the image
     */
    public record Inputs(Arch arch, String version, ImageManifest manifest, List<PackageLock.Entry> packages,
            Map<String, List<String>> licenses, WorkerBom.Read worker) {
        public Inputs {
            packages = List.copyOf(packages);
            licenses = Map.copyOf(licenses);
        }
    }

    /** The SBOM and how many components of each kind it lists. */
    public record Result(Bom bom, String json, int debianPackages, int mavenArtifacts) {
    }

    private ImageSbom() {
    }

    /**
     * Builds the SBOM, after checking that the image was built from exactly these lock entries.
     *
     * @throws ReleaseException the manifest's inputs are not the lock's, a Maven artifact has no
     *     SHA-256, or the written document does not validate against the CycloneDX schema
     */
    public static Result create(Inputs in) {
        checkAgainstLock(in.manifest(), in.packages(), in.arch());
        Bom bom = new Bom();
        bom.setSerialNumber("urn:uuid:" + UUID.nameUUIDFromBytes((in.arch().id() + " " + in.version() + " "
                + hashes(in.manifest())).getBytes(StandardCharsets.UTF_8)));
        Component image = imageComponent(in);
        Metadata metadata = new Metadata();
        // The image's own time (SOURCE_DATE_EPOCH, 0 by default), not the clock's: same image, same bytes.
        metadata.setTimestamp(new Date(in.manifest().sourceDateEpoch() * 1000L));
        metadata.setComponent(image);
        bom.setMetadata(metadata);

        Dependency root = new Dependency(image.getBomRef());
        for (PackageLock.Entry e : in.packages()) {
            Component c = debian(e, in.licenses().getOrDefault(e.name(), List.of()));
            bom.addComponent(c);
            root.addDependency(new Dependency(c.getBomRef()));
        }
        Bom worker = in.worker().bom();
        Component workerJar = workerComponent(worker, in.worker());
        bom.addComponent(workerJar);
        root.addDependency(new Dependency(workerJar.getBomRef()));
        int maven = 1;
        for (Component c : worker.getComponents() == null ? List.<Component>of() : worker.getComponents()) {
            requireSha256(c);
            c.addProperty(property(ECOSYSTEM, "maven"));
            bom.addComponent(c);
            maven++;
        }
        bom.addDependency(root);
        if (worker.getDependencies() != null) {
            worker.getDependencies().forEach(bom::addDependency);
        }
        String json = write(bom);
        return new Result(bom, json, in.packages().size(), maven);
    }

    /** The manifest's inputs must be the lock's entries: same names, versions, architectures and hashes. */
    static void checkAgainstLock(ImageManifest manifest, List<PackageLock.Entry> packages, Arch arch) {
        List<String> want = packages.stream().map(e -> e.name() + " " + e.version() + " " + e.architecture() + " "
                + e.sha256()).sorted().toList();
        List<String> have = manifest.inputs() == null ? List.of() : manifest.inputs().stream()
                .map(i -> i.name() + " " + i.version() + " " + i.architecture() + " " + i.sha256()).sorted().toList();
        if (!want.equals(have)) {
            List<String> missing = new ArrayList<>(want);
            missing.removeAll(have);
            List<String> extra = new ArrayList<>(have);
            extra.removeAll(want);
            throw new ReleaseException("the " + arch + " image was not built from the lock: the lock pins "
                    + missing + " which the manifest lacks, the manifest names " + extra + " which the lock lacks");
        }
    }

    private static Component imageComponent(Inputs in) {
        Component c = new Component();
        c.setType(Component.Type.OPERATING_SYSTEM);
        c.setGroup("io.qvm");
        c.setName("qvm-image");
        c.setVersion(in.version());
        c.setDescription("qvm guest image for " + in.arch().id() + ": kernel, initramfs (busybox, runsc, a linked "
                + "JRE, the renderer worker)");
        c.setPurl(purl("maven", "io.qvm", "qvm-image", in.version(),
                new TreeMap<>(Map.of("classifier", in.arch().id(), "type", "zip"))));
        c.setBomRef(c.getPurl());
        c.addProperty(property("qvm:arch", in.arch().id()));
        in.manifest().kernelVersion().ifPresent(k -> c.addProperty(property("qvm:kernel", k)));
        for (ImageManifest.Output o : in.manifest().outputFiles()) {
            c.addProperty(property("qvm:sha256:" + o.name(), o.sha256()));
        }
        return c;
    }

    private static Component debian(PackageLock.Entry e, List<String> licenses) {
        Component c = new Component();
        c.setType(switch (e.role()) {
            case KERNEL -> Component.Type.OPERATING_SYSTEM;
            case BUSYBOX, RUNSC, PERL -> Component.Type.APPLICATION;
            case JDK -> Component.Type.FRAMEWORK;
            case LIBRARY, FONTS -> Component.Type.LIBRARY;
        });
        c.setPublisher("Debian");
        c.setName(e.name());
        c.setVersion(e.version());
        c.setPurl(purl("deb", "debian", e.name(), e.version(), new TreeMap<>(Map.of("arch", e.architecture()))));
        c.setBomRef(c.getPurl());
        c.addHash(new Hash(Hash.Algorithm.SHA_256, e.sha256()));
        if (!licenses.isEmpty()) {
            LicenseChoice lc = new LicenseChoice();
            for (String name : licenses) {
                License l = new License();
                l.setName(name);
                lc.addLicense(l);
            }
            c.setLicenses(lc);
        }
        c.addProperty(property(ECOSYSTEM, "debian"));
        c.addProperty(property(ROLE, e.role().id()));
        c.addProperty(property(SUITE, e.suite()));
        return c;
    }

    /** The worker jar itself: the BOM's own component, hashed as the shaded jar that is in the image. */
    private static Component workerComponent(Bom worker, WorkerBom.Read read) {
        Component m = worker.getMetadata() == null ? null : worker.getMetadata().getComponent();
        if (m == null || m.getPurl() == null) {
            throw new ReleaseException(WorkerBom.ENTRY + " names no worker component (metadata.component)");
        }
        Component c = new Component();
        c.setType(Component.Type.APPLICATION);
        c.setGroup(m.getGroup());
        c.setName(m.getName());
        c.setVersion(m.getVersion());
        c.setDescription(m.getDescription());
        c.setPurl(m.getPurl());
        c.setBomRef(m.getBomRef() != null ? m.getBomRef() : m.getPurl());
        c.addHash(new Hash(Hash.Algorithm.SHA_256, read.jarSha256()));
        c.addProperty(property(ECOSYSTEM, "maven"));
        c.addProperty(property("qvm:path", io.qvm.image.OciConfig.WORKER_JAR));
        c.addProperty(property("qvm:note", "the shaded jar: its own classes and its closure's, listed below"));
        return c;
    }

    private static void requireSha256(Component c) {
        boolean has = c.getHashes() != null && c.getHashes().stream()
                .anyMatch(h -> Hash.Algorithm.SHA_256.getSpec().equals(h.getAlgorithm()));
        if (!has) {
            throw new ReleaseException("the worker's BOM lists " + c.getPurl() + " without a SHA-256");
        }
    }

    private static String write(Bom bom) {
        String json;
        try {
            json = BomGeneratorFactory.createJson(VERSION, bom).toJsonString();
        } catch (GeneratorException e) {
            throw new ReleaseException("cannot write the SBOM: " + e.getMessage(), e);
        }
        List<ParseException> problems;
        try {
            problems = new JsonParser().validate(json.getBytes(StandardCharsets.UTF_8), VERSION);
        } catch (IOException e) {
            throw new ReleaseException("cannot validate the SBOM: " + e.getMessage(), e);
        }
        if (!problems.isEmpty()) {
            throw new ReleaseException("the SBOM does not validate against CycloneDX " + SPEC + ": "
                    + problems.stream().map(ParseException::getMessage).limit(5).toList());
        }
        return json.endsWith("\n") ? json : json + "\n";
    }

    private static String hashes(ImageManifest m) {
        StringBuilder sb = new StringBuilder();
        m.outputFiles().forEach(o -> sb.append(o.name()).append('=').append(o.sha256()).append(' '));
        return sb.toString();
    }

    private static String purl(String type, String namespace, String name, String version,
            TreeMap<String, String> qualifiers) {
        try {
            return new PackageURL(type, namespace, name, version, qualifiers, null).canonicalize();
        } catch (MalformedPackageURLException e) {
            throw new ReleaseException("cannot make a package URL for " + name + " " + version + ": "
                    + e.getMessage(), e);
        }
    }

    private static Property property(String name, String value) {
        Property p = new Property();
        p.setName(name);
        p.setValue(value);
        return p;
    }
}
