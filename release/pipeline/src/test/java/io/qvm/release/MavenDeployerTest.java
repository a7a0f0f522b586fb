package io.qvm.release;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.qvm.internal.host.QvmEnvironment;
import io.qvm.internal.image.LoopbackMavenRepository;
import io.qvm.internal.image.TestImages;
import io.qvm.internal.image.TestKeys;
import io.qvm.protocol.image.Arch;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.bouncycastle.openpgp.PGPPublicKeyRing;
import org.bouncycastle.openpgp.PGPSignature;
import org.bouncycastle.openpgp.PGPSignatureList;
import org.bouncycastle.openpgp.PGPUtil;
import org.bouncycastle.openpgp.bc.BcPGPObjectFactory;
import org.bouncycastle.openpgp.operator.bc.BcKeyFingerprintCalculator;
import org.bouncycastle.openpgp.operator.bc.BcPGPContentVerifierBuilderProvider;
import org.eclipse.aether.artifact.Artifact;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deploy against a real repository on loopback ({@link LoopbackMavenRepository}: PUT/GET over
 * HTTP, Basic auth checked): the standard layout with every checksum file and the OpenPGP
 * signatures, the artifact-level metadata written last and merged by a second version, a wrong
 * password or an anonymous deploy refused with a typed error that never carries the password, a
 * failed upload that leaves no metadata, and the targets refused before anything is built.
 */
@Tag("unit")
@Tag("security")
class MavenDeployerTest {

    private static final String PASSWORD = "pa55-w0rd-never-logged";
    private static final String BASE = "io/qvm/qvm-image/";

    @TempDir
    Path tmp;

    private LoopbackMavenRepository remote;

    @BeforeEach
    void start() throws IOException {
        remote = new LoopbackMavenRepository(tmp.resolve("served")).credentials("deployer", PASSWORD);
    }

    @AfterEach
    void stop() {
        remote.close();
    }

    private QvmEnvironment env(Map<String, String> vars) {
        return QvmEnvironment.of(vars, tmp.resolve("home").toString(), "Linux");
    }

    private Path settings(String id, String user, String password) throws IOException {
        return Files.writeString(tmp.resolve("settings-" + id + ".xml"), """
                <?xml version="1.0" encoding="UTF-8"?>
                <settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
                  <servers>
                    <server><id>other</id><username>nobody</username><password>nothing</password></server>
                    <server><id>%s</id><username>%s</username><password>%s</password></server>
                  </servers>
                </settings>
                """.formatted(id, user, password));
    }

    private MavenDeployer.Target target(String password) throws IOException {
        return MavenDeployer.target(remote.url().toString(), "qvm-releases", settings("qvm-releases", "deployer",
                password), false, env(Map.of()));
    }

    /** A version's artifacts as the release makes them: its POM, and a real image zip and manifest. */
    private record Artifacts(Path pom, Map<Arch, Path> zips, Map<Arch, Path> manifests) {
    }

    private Artifacts artifacts(String version) throws IOException {
        Path dir = Files.createTempDirectory(tmp, "artifacts-" + version + "-");
        Path pom = dir.resolve("qvm-image-" + version + ".pom");
        MavenInstaller.writePom(version, pom);
        Path image = TestImages.write(dir.resolve("x86_64"), Arch.X86_64, version);
        Path zip = TestImages.zip(dir.resolve("qvm-image-" + version + "-x86_64.zip"), TestImages.entries(image));
        Path manifest = Files.copy(image.resolve("manifest.json"), dir.resolve("qvm-image-" + version + "-x86_64.json"));
        return new Artifacts(pom, Map.of(Arch.X86_64, zip), Map.of(Arch.X86_64, manifest));
    }

    private MavenDeployer.Deployed deploy(MavenDeployer.Target t, String version, ReleaseSigner signer)
            throws IOException {
        Artifacts a = artifacts(version);
        return MavenDeployer.deploy(t, version, a.pom(), a.zips(), a.manifests(), signer,
                Files.createTempDirectory(tmp, "work-"));
    }

    private static String hash(String algorithm, Path file) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(Files.readAllBytes(file)));
    }

    @Test
    void theStandardLayoutWithEveryChecksumTheSignaturesAndTheMetadataLast() throws Exception {
        TestKeys.Key key = TestKeys.generate("qvm release <release@qvm.test>", "s3cret");
        ReleaseSigner signer = ReleaseSigner.load(key.writeSecret(tmp.resolve("key.asc")), "s3cret".toCharArray());
        Artifacts a = artifacts("1.0.0");
        MavenDeployer.Deployed d = MavenDeployer.deploy(target(PASSWORD), "1.0.0", a.pom(), a.zips(), a.manifests(),
                signer, Files.createTempDirectory(tmp, "work-"));

        Path root = remote.root();
        Path v = root.resolve(BASE + "1.0.0");
        Map<String, Path> deployed = new LinkedHashMap<>();
        deployed.put("qvm-image-1.0.0.pom", a.pom());
        deployed.put("qvm-image-1.0.0-x86_64.zip", a.zips().get(Arch.X86_64));
        deployed.put("qvm-image-1.0.0-x86_64.json", a.manifests().get(Arch.X86_64));
        for (Map.Entry<String, Path> e : deployed.entrySet()) {
            Path f = v.resolve(e.getKey());
            assertEquals(-1, Files.mismatch(f, e.getValue()), f + " is the artifact, byte for byte");
            assertEquals(hash("SHA-512", f), Files.readString(v.resolve(e.getKey() + ".sha512")).strip());
            assertEquals(hash("SHA-256", f), Files.readString(v.resolve(e.getKey() + ".sha256")).strip());
            assertEquals(hash("SHA-1", f), Files.readString(v.resolve(e.getKey() + ".sha1")).strip());
            assertEquals(hash("MD5", f), Files.readString(v.resolve(e.getKey() + ".md5")).strip());
            assertTrue(verifies(v.resolve(e.getKey() + ".asc"), f, key), e.getKey() + ".asc is the release key's "
                    + "signature of it");
            assertFalse(Files.exists(v.resolve(e.getKey() + ".asc.sha1")), "a signature is not checksummed");
        }
        Path metadata = root.resolve(BASE + "maven-metadata.xml");
        String xml = Files.readString(metadata);
        assertTrue(xml.contains("<groupId>io.qvm</groupId>") && xml.contains("<artifactId>qvm-image</artifactId>")
                && xml.contains("<release>1.0.0</release>") && xml.contains("<version>1.0.0</version>"), xml);
        for (String alg : List.of("sha512", "sha256", "sha1", "md5")) {
            assertTrue(Files.isRegularFile(root.resolve(BASE + "maven-metadata.xml." + alg)), alg);
        }

        List<String> puts = remote.requests().stream().filter(r -> r.startsWith("PUT ")).toList();
        assertTrue(puts.stream().allMatch(r -> r.endsWith(" 201 deployer")), "every PUT authenticated: " + puts);
        int firstMetadata = indexOf(puts, "maven-metadata.xml");
        int lastArtifact = lastIndexOf(puts, "/1.0.0/");
        assertTrue(lastArtifact < firstMetadata, "every artifact before the metadata: " + puts);
        assertTrue(d.files().contains(BASE + "1.0.0/qvm-image-1.0.0-x86_64.zip"), d.files().toString());
        assertTrue(d.files().get(d.files().size() - 1).endsWith("maven-metadata.xml"), d.files().toString());
        assertEquals(List.of(), leftovers(root), "no temporary upload left in the repository");
    }

    /**
     * The libraries go up with the image in one deploy: per artifact its checksums and the release
     * key's signature, and per artifactId its own merged metadata, after every artifact.
     */
    @Test
    void theLibrariesWithTheImageEachCheckedSummedAndSigned() throws Exception {
        TestKeys.Key key = TestKeys.generate("qvm release <release@qvm.test>", "s3cret");
        ReleaseSigner signer = ReleaseSigner.load(key.writeSecret(tmp.resolve("key.asc")), "s3cret".toCharArray());
        Artifacts a = artifacts("1.0.0");
        LibraryArtifacts libs = LibraryArtifacts.fromReactor(Reactors.write(tmp.resolve("reactor"), "1.0.0"), "1.0.0");
        List<Artifact> all = new ArrayList<>(MavenInstaller.imageArtifacts("1.0.0",
                a.pom(), a.zips(), a.manifests()));
        all.addAll(libs.artifacts());
        MavenDeployer.Deployed d = MavenDeployer.deploy(target(PASSWORD), all, signer,
                Files.createTempDirectory(tmp, "work-"));

        Path root = remote.root();
        for (Artifact lib : libs.artifacts()) {
            String name = lib.getArtifactId() + "-1.0.0" + (lib.getClassifier().isEmpty() ? "" : "-" + lib.getClassifier())
                    + "." + lib.getExtension();
            Path f = root.resolve("io/qvm/" + lib.getArtifactId() + "/1.0.0/" + name);
            assertEquals(-1, Files.mismatch(f, lib.getPath()), f + " is the artifact, byte for byte");
            assertEquals(hash("SHA-512", f), Files.readString(f.resolveSibling(name + ".sha512")).strip());
            assertEquals(hash("SHA-1", f), Files.readString(f.resolveSibling(name + ".sha1")).strip());
            assertEquals(hash("MD5", f), Files.readString(f.resolveSibling(name + ".md5")).strip());
            assertTrue(verifies(f.resolveSibling(name + ".asc"), f, key), name + ".asc is the release key's signature");
            assertFalse(verifies(f.resolveSibling(name + ".asc"), a.pom(), key), "and of that file only");
        }
        for (String artifactId : List.of("qvm-image", "qvm-parent", "qvm-bom", "qvm-protocol", "qvm-qemu-backend")) {
            String xml = Files.readString(root.resolve("io/qvm/" + artifactId + "/maven-metadata.xml"));
            assertTrue(xml.contains("<artifactId>" + artifactId + "</artifactId>") && xml.contains("<version>1.0.0</version>"),
                    xml);
            assertTrue(d.files().contains("io/qvm/" + artifactId + "/maven-metadata.xml"), d.files().toString());
        }
        List<String> puts = remote.requests().stream().filter(r -> r.startsWith("PUT ")).toList();
        assertTrue(lastIndexOf(puts, "/1.0.0/") < indexOf(puts, "maven-metadata.xml"),
                "every artifact before any metadata: " + puts);
    }

    @Test
    void aSecondVersionMergesTheMetadataAndLeavesTheFirst() throws Exception {
        deploy(target(PASSWORD), "1.0.0", null);
        deploy(target(PASSWORD), "1.1.0", null);
        String xml = Files.readString(remote.root().resolve(BASE + "maven-metadata.xml"));
        assertTrue(xml.contains("<version>1.0.0</version>") && xml.contains("<version>1.1.0</version>"), xml);
        assertTrue(xml.contains("<release>1.1.0</release>"), xml);
        assertTrue(xml.indexOf("<version>1.0.0</version>") < xml.indexOf("<version>1.1.0</version>"), xml);
        assertTrue(Files.isRegularFile(remote.root().resolve(BASE + "1.0.0/qvm-image-1.0.0-x86_64.zip")));
        assertEquals(hash("SHA-1", remote.root().resolve(BASE + "maven-metadata.xml")),
                Files.readString(remote.root().resolve(BASE + "maven-metadata.xml.sha1")).strip(),
                "the merged metadata's checksums are its own");
        assertTrue(remote.requests().stream().anyMatch(r -> r.startsWith("GET /repo/" + BASE + "maven-metadata.xml 200")),
                "the second deploy read the first's metadata to merge it: " + remote.requests());
    }

    @Test
    void aWrongPasswordIsATypedRefusalThatNeverShowsThePassword() throws Exception {
        MavenDeployer.Target t = target("not-the-" + PASSWORD);
        ReleaseException e = assertThrows(ReleaseException.class, () -> deploy(t, "1.0.0", null));
        String m = e.getMessage();
        assertTrue(m.startsWith("the deploy of io.qvm:qvm-image:1.0.0 to " + remote.url() + " (repository qvm-releases) "
                + "answered HTTP 401 (unauthorized) as deployer: give the deploy user's <username> and <password> in the "
                + "<server> whose <id> is qvm-releases (credentials: the <server> qvm-releases of "), m);
        assertFalse(m.contains(PASSWORD), "the password is never in a message");
        assertFalse(t.toString().contains(PASSWORD), t.toString());
        assertFalse(Files.exists(remote.root().resolve(BASE + "maven-metadata.xml")), "no metadata after a failure");
        assertEquals(List.of(), files(remote.root()), "nothing was accepted");
    }

    @Test
    void anAnonymousDeployIsRefusedAndSaysWhichServerToAdd() throws Exception {
        MavenDeployer.Target t = MavenDeployer.target(remote.url().toString(), "qvm-releases",
                settings("someone-else", "u", "p"), false, env(Map.of()));
        assertTrue(t.username().isEmpty());
        ReleaseException e = assertThrows(ReleaseException.class, () -> deploy(t, "1.0.0", null));
        assertTrue(e.getMessage().contains("answered HTTP 401 (unauthorized) as an anonymous user: give the deploy user's "
                + "<username> and <password> in the <server> whose <id> is qvm-releases (credentials: no <server> "
                + "qvm-releases in "), e.getMessage());
    }

    @Test
    void aFailedUploadLeavesNoMetadataAndSaysWhatWentUp() throws Exception {
        remote.fail(".json", 500);
        ReleaseException e = assertThrows(ReleaseException.class, () -> deploy(target(PASSWORD), "1.0.0", null));
        assertTrue(e.getMessage().contains("answered HTTP 500 (a server error): the repository is failing; try the "
                + "deploy again later"), e.getMessage());
        assertFalse(Files.exists(remote.root().resolve(BASE + "maven-metadata.xml")),
                "metadata is uploaded only after every artifact: " + remote.requests());
        assertTrue(remote.requests().stream().noneMatch(r -> r.startsWith("PUT ") && r.contains("maven-metadata")),
                remote.requests().toString());
    }

    @Test
    void aForbiddenRedeployAndAnUnreachableRepositorySayWhatToDo() throws Exception {
        remote.fail(".pom", 403);
        ReleaseException e = assertThrows(ReleaseException.class, () -> deploy(target(PASSWORD), "1.0.0", null));
        assertTrue(e.getMessage().contains("answered HTTP 403 (forbidden) to deployer: that user may not deploy there, "
                + "or the repository refuses to overwrite a released version"), e.getMessage());

        MavenDeployer.Target t = target(PASSWORD);
        remote.close();
        e = assertThrows(ReleaseException.class, () -> deploy(t, "1.0.0", null));
        assertTrue(e.getMessage().contains(" could not connect ("), e.getMessage());
        assertFalse(e.getMessage().contains(PASSWORD));
    }

    @Test
    void targetsAreCheckedBeforeAnythingIsBuilt() throws IOException {
        QvmEnvironment env = env(Map.of("DEPLOY_PASSWORD", "from-the-environment"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MavenDeployer.target("http://repo.example/releases", "r", null, false, env));
        assertTrue(e.getMessage().startsWith("--deploy-url http://repo.example/releases is plain http to repo.example, "
                + "not loopback"), e.getMessage());
        assertTrue(e.getMessage().endsWith("Use https, or add --allow-insecure-http if this network is trusted"));
        assertEquals(URI.create("http://repo.example/releases"),
                MavenDeployer.target("http://repo.example/releases", "r", null, true, env).url());
        for (String loopback : List.of("http://localhost:8081/r", "http://127.0.0.1/r", "http://[::1]:8081/r")) {
            assertEquals(URI.create(loopback), MavenDeployer.target(loopback, "r", null, false, env).url());
        }
        assertFalse(MavenDeployer.loopback("127.0.0.1.nip.io"), "a name is not looked up");
        for (String bad : List.of("ftp://repo.example/r", "https://u:p@repo.example/r", "repo.example/r",
                "https://repo.example/r?x=1")) {
            assertThrows(IllegalArgumentException.class, () -> MavenDeployer.target(bad, "r", null, false, env), bad);
        }
        assertThrows(IllegalArgumentException.class,
                () -> MavenDeployer.target("https://repo.example/r", "../r", null, false, env));
        e = assertThrows(IllegalArgumentException.class, () -> MavenDeployer.target("https://repo.example/r", "r",
                tmp.resolve("missing.xml"), false, env));
        assertTrue(e.getMessage().contains("does not exist"), e.getMessage());

        Path encrypted = settings("r", "u", "{COQLCE6DU6GtcS5P=}");
        e = assertThrows(IllegalArgumentException.class,
                () -> MavenDeployer.target("https://repo.example/r", "r", encrypted, false, env));
        assertTrue(e.getMessage().contains("has an encrypted password (settings-security.xml), which qvm does not "
                + "decrypt: write <password>${env.NAME}</password>"), e.getMessage());

        MavenDeployer.Target t = MavenDeployer.target("https://repo.example/r", "r",
                settings("r", "u", "${env.DEPLOY_PASSWORD}"), false, env);
        assertEquals("from-the-environment", new String(t.password()));
        assertEquals("u", t.username().orElseThrow());
        assertFalse(t.toString().contains("from-the-environment"), t.toString());
        MavenDeployer.forget(t);
        assertEquals("\0".repeat("from-the-environment".length()), new String(t.password()));

        assertTrue(MavenDeployer.target("https://repo.example/r", "r", null, false, env).username().isEmpty(),
                "no ~/.m2/settings.xml: anonymous");
    }

    /** Whether {@code asc} is {@code key}'s valid detached signature of {@code data}. */
    static boolean verifies(Path asc, Path data, TestKeys.Key key) throws Exception {
        PGPPublicKeyRing ring = new PGPPublicKeyRing(PGPUtil.getDecoderStream(new ByteArrayInputStream(
                key.armouredPublic().getBytes(java.nio.charset.StandardCharsets.US_ASCII))), new BcKeyFingerprintCalculator());
        try (InputStream in = PGPUtil.getDecoderStream(Files.newInputStream(asc))) {
            PGPSignature sig = ((PGPSignatureList) new BcPGPObjectFactory(in).nextObject()).get(0);
            sig.init(new BcPGPContentVerifierBuilderProvider(), ring.getPublicKey(sig.getKeyID()));
            sig.update(Files.readAllBytes(data));
            return sig.verify();
        }
    }

    private static int indexOf(List<String> l, String part) {
        for (int i = 0; i < l.size(); i++) {
            if (l.get(i).contains(part)) {
                return i;
            }
        }
        return Integer.MAX_VALUE;
    }

    private static int lastIndexOf(List<String> l, String part) {
        for (int i = l.size() - 1; i >= 0; i--) {
            if (l.get(i).contains(part)) {
                return i;
            }
        }
        return -1;
    }

    private static List<String> files(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(Files::isRegularFile).map(p -> root.relativize(p).toString()).toList();
        }
    }

    private static List<String> leftovers(Path root) throws IOException {
        return files(root).stream().filter(f -> f.contains(".upload-")).toList();
    }
}
